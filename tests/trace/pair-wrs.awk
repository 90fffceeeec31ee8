# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Reads `perf script -F pid,tid,event,trace` of the rpcrdma USDT probes
# (src/fabric/trace.h) and checks invariant 4 from outside the process:
# every completion answers a work request that was posted and is still
# outstanding; every receive, every signaled send and every drain marker
# gets its completion before the process ends; an unsignaled send is
# retired by its own completion (a flush) or by a later completion on its
# QP's send queue. Ids need not be unique among unsignaled requests (the
# REGs of one call share one), but a signaled one or a receive must not
# reuse the id of another still outstanding.
# A process that never closes its device (one a test killed) is checked
# only up to its end.
# Prints what it found; exits 1 on any violation.

BEGIN {
	hitarg["post_send"] = "arg5"; hitarg["post_recv"] = "arg3"
	hitarg["post_error"] = "arg4"; hitarg["post_drain"] = "arg4"
	hitarg["completion"] = "arg6"
}

function arg(name,    i, kv) {
	for (i = 3; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == name)
			return kv[2]
	}
	return ""
}

function bad(msg) {
	if (nbad++ < 20)
		print "violation: " msg " (line " NR ")"
}

function post(qp, key, kind,    n, i, l) {
	if (kind != "unsignaled") {
		n = split(list[key], l, " ")
		for (i = 1; i <= n; i++)
			if (alive[l[i]] && ekind[l[i]] != "unsignaled")
				bad("work request " key " posted again while outstanding")
	}
	ne++
	ekind[ne] = kind; eqp[ne] = qp; ekey[ne] = key; alive[ne] = 1
	list[key] = list[key] " " ne
	if (kind == "unsignaled")
		uq[qp, utail[qp]++] = ne # in post order, per QP
	else
		open_[qp, ne] = 1
	if (kind == "recv") nrecv++; else nsend++
}

function retire(e) {
	alive[e] = 0
	delete open_[eqp[e], e]
}

# The outstanding entry a completion of key answers: a signaled send or
# receive first, else an unsignaled send (flushed); 0 if none.
function answered(key,    n, i, l, any) {
	n = split(list[key], l, " ")
	for (i = 1; i <= n; i++)
		if (alive[l[i]] && ekind[l[i]] != "unsignaled")
			return l[i]
	for (i = 1; i <= n; i++)
		if (alive[l[i]])
			return l[i]
	return 0
}

{
	if (split($1, who, "/") != 2) { # pid/tid: the hit numbers need the thread
		print "violation: line " NR " names no thread (perf script -F pid,tid,...)"
		nbad++
		exit 1
	}
	pid = who[1]
	ev = $2; sub(/:$/, "", ev); sub(/^sdt_rpcrdma:/, "", ev)
	sub(/_[0-9]+$/, "", ev) # perf numbers a second site: post_error_1
	qp = pid ":" arg("arg1"); key = qp ":" arg("arg2")
}

# A hit the tracer recorded twice: the same thread and hit number
# (src/fabric/trace.h). Dropped, and counted; two completions of one work
# request are two hits and still a violation.
ev in hitarg {
	hit = $1 SUBSEP arg(hitarg[ev])
	if (hit in seen) {
		ndup++
		next
	}
	seen[hit] = 1
}

ev == "post_send" {
	post(qp, key, (arg("arg4") % 2) ? "signaled" : "unsignaled")
	next
}

ev == "post_recv" { post(qp, key, "recv"); next }

ev == "post_drain" {
	post(qp, key, "signaled")
	post(qp, qp ":" arg("arg3"), "recv")
	next
}

# A post the provider refused (-ENOMEM, a full queue): the request was
# traced as posted, and is not outstanding after all.
ev == "post_error" {
	nerr++
	n = split(list[key], l, " ")
	for (i = n; i >= 1; i--)
		if (alive[l[i]]) {
			retire(l[i])
			next
		}
	bad("refused post of " key " that was never posted")
	next
}

# A QP reset for reuse, or destroyed: every queue must be empty by then
# (a drain that gave up is counted by the transport, and is a violation
# here); what was left on it, and its address, are forgotten.
ev == "qp_reset" || ev == "qp_destroy" {
	for (k in open_) {
		split(k, part, SUBSEP)
		if (part[1] != qp)
			continue
		e = part[2]
		bad(ekind[e] " work request " ekey[e] " outstanding at " ev)
		retire(e)
	}
	while (uhead[qp] < utail[qp])
		alive[uq[qp, uhead[qp]++]] = 0
	next
}

# A process that closes no device was killed: what it left outstanding
# is not held against it.
ev == "device_close" { closed[pid] = 1; next }

ev == "completion" {
	ncqe++
	e = answered(key)
	if (!e) {
		bad("completion of " key " (status " arg("arg3") ") that is not outstanding")
		next
	}
	retire(e)
	if (ekind[e] == "recv")
		next
	# Every unsignaled send posted before it on its QP retires with it.
	while (uhead[qp] < utail[qp] && uq[qp, uhead[qp]] < e)
		alive[uq[qp, uhead[qp]++]] = 0
	next
}

END {
	left = 0
	for (k in open_) {
		split(k, part, SUBSEP)
		i = part[2]
		split(ekey[i], part, ":")
		if (!(part[1] in closed)) {
			killed[part[1]] = 1
			continue
		}
		left++
		bad(ekind[i] " work request " ekey[i] " never completed")
	}
	for (p in killed)
		nkilled++
	if (nkilled)
		printf "%d processes ended without closing their device (killed): not checked at exit\n", nkilled
	if (ndup)
		printf "%d probe hits recorded twice by the tracer (same thread and hit number): each counted once\n", ndup
	printf "%d sends and %d receives posted, %d refused, %d completions, %d left outstanding, %d violations\n", nsend, nrecv, nerr, ncqe, left, nbad
	if (nsend == 0 || nrecv == 0 || ncqe == 0) {
		print "violation: the trace holds no posts or no completions"
		exit 1
	}
	exit nbad ? 1 : 0
}
