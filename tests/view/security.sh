#!/bin/sh
# SPDX-License-Identifier: MIT
# strata view's door: 403 without the token or with another Host or Origin, 4xx for odd paths and values, survives many and malformed requests.
# usage: security.sh STRATA WORKERS WORKDIR
set -u
strata=$1
workers=$2
work=$3/security
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
command -v curl >/dev/null || { echo "view-security: SKIP: curl is missing"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
failed=0
fail() { echo "view-security: FAIL: $*" >&2; failed=1; }

STRATA_OUTPUT=$work/trace "$workers" 2 2000 >/dev/null || { echo "recording failed" >&2; exit 1; }
view_start "$strata" "$work/trace" "$work/view" || exit 1
case $view_hostport in
127.0.0.1:*) ;;
*) fail "not bound to 127.0.0.1 by default: $view_url" ;;
esac
port=${view_hostport#*:}

# status URL [curl options...]
status() {
	u=$1
	shift
	curl -s -o /dev/null -w '%{http_code}' --path-as-is --max-time 10 "$@" "$u"
}
expect() { # CODE WHAT URL [curl options...]
	want=$1 what=$2
	shift 2
	got=$(status "$@")
	[ "$got" = "$want" ] || fail "$what: $got, expected $want"
}

tok=$view_base/$view_token
expect 200 "the page with the token" "$tok/"
expect 200 "the summary with the token" "$tok/api/summary"
expect 302 "the token without a slash" "$tok"
expect 403 "no token" "$view_base/"
expect 403 "no token, an API" "$view_base/api/summary"
expect 403 "no token, the live poll" "$view_base/api/live"
expect 403 "the live poll from another Origin" "$tok/api/live" -H "Origin: http://evil.example"
expect 200 "the live poll with the token" "$tok/api/live"
expect 403 "a wrong token" "$view_base/0123456789abcdef0123456789abcdef/api/summary"
expect 403 "a short token" "$view_base/${view_token%?}/api/summary"
expect 403 "a DNS name as Host (rebinding)" "$tok/api/summary" -H "Host: evil.example:$port"
expect 403 "another port in Host" "$tok/api/summary" -H "Host: 127.0.0.1:1"
expect 403 "no port in Host" "$tok/api/summary" -H "Host: 127.0.0.1"
expect 403 "an empty Host" "$tok/api/summary" -H "Host:"
expect 200 "localhost as Host" "$tok/api/summary" -H "Host: localhost:$port"
expect 403 "another Origin" "$tok/api/summary" -H "Origin: http://evil.example"
expect 403 "an Origin on another port" "$tok/api/summary" -H "Origin: http://127.0.0.1:1"
expect 403 "a null Origin" "$tok/api/summary" -H "Origin: null"
expect 200 "this server's Origin" "$tok/api/summary" -H "Origin: http://$view_hostport"
# paths: only the embedded files exist; nothing is opened by name
expect 404 "dot-dot" "$tok/../../../../etc/passwd"
expect 404 "encoded dot-dot" "$tok/%2e%2e/%2e%2e/etc/passwd"
expect 404 "an absolute path" "$tok//etc/passwd"
expect 404 "the trace's metadata by name" "$tok/metadata"
expect 404 "no such API" "$tok/api/files"
# values
expect 400 "w=0" "$tok/api/window?t0=0&t1=10&w=0"
expect 400 "w too large" "$tok/api/window?t0=0&t1=10&w=99999999999999999999999"
expect 400 "t0 not a number" "$tok/api/window?t0=abc"
expect 400 "t0 negative" "$tok/api/window?t0=-5"
expect 400 "t1 past the trace" "$tok/api/window?t1=999999999999999999"
expect 400 "before too large" "$tok/api/list?before=100000"
expect 400 "tid not a number" "$tok/api/list?tid=1x"
expect 200 "the statistics" "$tok/api/stats?t0=0&kind=0"
expect 403 "no token, the statistics" "$view_base/api/stats"
expect 400 "stats: kind too large" "$tok/api/stats?kind=70000"
expect 400 "stats: t1 past the trace" "$tok/api/stats?t1=999999999999999999"
expect 400 "stats: a bad expression" "$tok/api/stats?expr=%28"
expect 400 "stats: too many CPUs" "$tok/api/stats?cpus=$(seq -s, 0 64)"
expect 200 "the intervals of a kind" "$tok/api/intervals?kind=0&by=1&n=10"
expect 403 "no token, the intervals" "$view_base/api/intervals"
expect 400 "intervals: n=0" "$tok/api/intervals?n=0"
expect 400 "intervals: n too large" "$tok/api/intervals?n=1001"
expect 400 "intervals: by=2" "$tok/api/intervals?by=2"
expect 400 "intervals: kind negative" "$tok/api/intervals?kind=-1"
expect 200 "a typed activity rule" "$tok/api/activity?rules=j%3Dwork:job_begin..work:job_end&n=5"
expect 403 "no token, a typed rule" "$view_base/api/activity?rules=j%3Dwork:job_begin..work:job_end"
expect 400 "activity: no rule" "$tok/api/activity"
expect 400 "activity: not a rule" "$tok/api/activity?rules=..%2F..%2Fetc%2Fpasswd"
expect 400 "activity: a glob matching nothing" "$tok/api/activity?rules=x%3D%2Fetc%2Fpasswd..*"
expect 400 "activity: five rules" "$tok/api/activity?rules=$(printf 'x%%3Dwork:*..work:*%%3B%.0s' 1 2 3 4)x%3Dwork:*..work:*"
expect 400 "activity: a rule of 300 bytes" "$tok/api/activity?rules=x%3D$(printf '%0300d' 0)..b"
expect 400 "activity: rules of 2000 bytes" "$tok/api/activity?rules=$(printf '%02000d' 0)"
expect 400 "activity: a control byte" "$tok/api/activity?rules=x%3Da..b%01"
expect 400 "activity: n too large" "$tok/api/activity?rules=j%3Dwork:job_begin..work:job_end&n=1001"
expect 200 "t1 <= t0 is an empty window" "$tok/api/window?t0=10&t1=5&w=10"
expect 405 "POST" "$tok/api/summary" -X POST -d x=1
expect 405 "DELETE" "$tok/api/summary" -X DELETE

# malformed HTTP on raw sockets, then a thousand requests, 100 at a time
python3 "$here/hammer.py" "$view_url" || fail "malformed or many requests"
expect 200 "still up after them" "$tok/api/summary"
view_stop || fail "Ctrl-C did not stop it"

# --bind ::1, where the machine has IPv6 loopback
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
	view_start "$strata" "$work/trace" "$work/view6" --bind ::1 || exit 1
	case $view_url in
	"http://[::1]:"*) expect 200 "IPv6 page" "$view_url" ;;
	*) fail "--bind ::1: $view_url" ;;
	esac
	expect 403 "IPv6, a DNS name as Host" "${view_url}api/summary" -H "Host: evil.example:${view_hostport##*:}"
	view_stop || fail "Ctrl-C (IPv6)"
fi
"$strata" view "$work/trace" --bind nosuch.example >/dev/null 2>&1 && fail "--bind with a name"
"$strata" view "$work/trace" --port 70000 >/dev/null 2>&1 && fail "--port 70000"
"$strata" view "$work/nosuch" >/dev/null 2>&1 && fail "a missing trace"
[ $failed = 0 ] && echo "view-security: ok"
exit $failed
