# bash completion for statectl(1).
#
# Commands and options come from statectl itself (--list-commands,
# --list-options), so completion follows the command table. Scopes,
# namespaces, keys and queue names are completed from the store, with the
# --db/--key-file/--plaintext given on the line, through `statectl ls`;
# never when --passphrase is on the line (that would prompt).

_statectl_words() { # words from a command, one per line, into COMPREPLY
	local cur=$1 w
	shift
	COMPREPLY=()
	while IFS= read -r w; do
		[[ $w == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$w")")
	done < <("$@" 2>/dev/null)
}

_statectl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local prog=${COMP_WORDS[0]} i w
	local -a pos=() store=() fam=()
	local passphrase=0

	# Options that take a value, and what the value is.
	case $prev in
	--db|--key-file|--new-key-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		return ;;
	--family)
		COMPREPLY=($(compgen -W 'kv counter log queue' -- "$cur"))
		return ;;
	--start|--end|--limit|--after)
		COMPREPLY=()
		return ;;
	--interval)
		COMPREPLY=($(compgen -W '500ms 1s 2s 5s' -- "$cur"))
		return ;;
	esac

	# The words before the cursor: positional ones, and the store options.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		--db|--key-file)
			store+=("$w" "${COMP_WORDS[i+1]}"); ((i++)) ;;
		--db=*|--key-file=*|--plaintext)
			store+=("$w") ;;
		--passphrase) passphrase=1 ;;
		--family) fam=(--family "${COMP_WORDS[i+1]}"); ((i++)) ;;
		--start|--end|--limit|--after|--new-key-file|--interval) ((i++)) ;;
		-*) ;;
		*) pos+=("$w") ;;
		esac
	done

	local cmd=${pos[0]-} sub=
	case $cmd in
	counter|log|queue) sub=${pos[1]-} ;;
	esac

	if [[ $cur == -* ]]; then
		_statectl_words "$cur" "$prog" --list-options $cmd $sub
		return
	fi
	if [[ -z $cmd ]]; then
		_statectl_words "$cur" "$prog" --list-commands
		return
	fi
	if [[ $cmd == help ]]; then
		_statectl_words "$cur" "$prog" --list-commands ${pos[1]-}
		return
	fi
	case $cmd in
	counter|log|queue)
		if ((${#pos[@]} == 1)); then
			_statectl_words "$cur" "$prog" --list-commands "$cmd"
			return
		fi ;;
	esac

	# Which positional argument the cursor is on (0: the first after the
	# command words), and whether it is a name in the store.
	local n=$(( ${#pos[@]} - 1 ))
	case $cmd in
	counter|log|queue) n=$((n - 1)) ;;
	esac
	case $cmd in
	checkpoint|restore|export|import|keygen|metrics)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		return ;;
	esac
	((passphrase)) && return
	local -a parent=()
	case $cmd in
	queue)
		((n == 0)) && _statectl_words "$cur" "$prog" "${store[@]}" ls --family queue
		return ;;
	counter) fam=(--family counter) ;;
	log) fam=(--family log) ;;
	get|put|del|scan|delete-range|drain|exec-clear|ls) ;;
	*) return ;;
	esac
	# names so far: the positional words after the command words
	if [[ $cmd == counter || $cmd == log ]]; then
		parent=("${pos[@]:2}")
	else
		parent=("${pos[@]:1}")
	fi
	((n <= 2)) || return
	[[ $cmd == exec-clear ]] && ((n > 0)) && return
	[[ $cmd == scan || $cmd == delete-range || $cmd == drain || $cmd == ls ]] &&
		((n > 1)) && return
	_statectl_words "$cur" "$prog" "${store[@]}" ls "${fam[@]}" "${parent[@]}"
}

complete -F _statectl statectl
