# Object-verb names for the connection manager (issue 16):
# the listener and the connection request are the objects.
s/\brr_listen\b/rr_listener_create/g
s/\brr_accept\b/rr_conn_req_accept/g
s/\brr_reject\b/rr_conn_req_reject/g
