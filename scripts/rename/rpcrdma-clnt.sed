# Issue 16: the RDMA client's (src/rpcrdma/clnt*) global symbols get the
# internal prefix rr__; clnt_ is libtirpc's namespace. Apply with
#   sed -E -i -f scripts/rename/rpcrdma-clnt.sed FILE...
s/\bclnt_(conn_first|conn_lost|conn_step|decode_reply|drain|drain_now|drained|drive|fail_all|fence|ka_init|ka_note|ka_tick|kick_queue|post_drain|post_recv_on|req_finish|req_resend|req_unexpose|run_callbacks|start|unqueue)\b/rr__clnt_\1/g
