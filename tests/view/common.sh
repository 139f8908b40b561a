# SPDX-License-Identifier: MIT
# Shared by tests/view/*.sh: start `strata view` on a trace, read its URL, stop it.
# shellcheck shell=sh

# view_start STRATA TRACE LOG [OPTIONS...]: sets view_pid, view_url (http://HOST:PORT/TOKEN/),
# view_base (http://HOST:PORT), view_hostport and view_token.
view_start() {
	vs_strata=$1 vs_trace=$2 vs_log=$3
	shift 3
	# --wait: the URL once the model is ready (the tests ask at once);
	# view_wait= (set, empty) serves at once (docs/view.md, "Serve at once")
	# shellcheck disable=SC2086
	"$vs_strata" view "$vs_trace" ${view_wait---wait} "$@" >"$vs_log.out" 2>"$vs_log.err" &
	view_pid=$!
	set -- "$vs_strata" "$vs_trace" "$vs_log"
	i=0
	while ! [ -s "$3.out" ] && [ $i -lt 300 ]; do
		kill -0 "$view_pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	view_url=$(head -n1 "$3.out")
	case $view_url in
	http://*/*/) ;;
	*)
		echo "view: no URL on the first line of stdout" >&2
		cat "$3.err" >&2
		return 1
		;;
	esac
	view_hostport=${view_url#http://}
	view_hostport=${view_hostport%%/*}
	view_token=${view_url#http://"$view_hostport"/}
	view_token=${view_token%/}
	view_base=http://$view_hostport
}

# view_stop: Ctrl-C, as a person would; fails when it does not stop in 10 s.
view_stop() {
	kill -INT "$view_pid" 2>/dev/null
	i=0
	while kill -0 "$view_pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$view_pid" 2>/dev/null; then
		kill -KILL "$view_pid"
		return 1
	fi
	wait "$view_pid"
}
