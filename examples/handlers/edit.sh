#!/usr/bin/env bash
# Example Edit handler: replaces the first occurrence (or every one, with replace_all) of
# old_string by new_string in file_path. Arguments come from the contract's argv template,
# each placeholder one argument, so no quoting can go wrong.
set -euo pipefail
file=$1 old=$2 new=$3 all=${4:-false}
[[ -f $file ]] || { echo "no such file: $file" >&2; exit 1; }
content=$(<"$file")
[[ $content == *"$old"* ]] || { echo "old_string not found in $file" >&2; exit 1; }
if [[ $all == true ]]; then
  printf '%s\n' "${content//"$old"/"$new"}" >"$file"
else
  printf '%s\n' "${content/"$old"/"$new"}" >"$file"
fi
echo "edited $file"
