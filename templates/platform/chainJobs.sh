#!/usr/bin/env bash
# Submit a job that starts only after the previous job of the same shared folder ended.
#   chainJobs.sh SUBMIT_CMD NEEDS_SUBMIT JOB_INFO_FILE SCRIPT
# The id of the job submitted last is kept in JOB_INFO_FILE.
submit_cmd=$1
needs_submit=$2
info_file=$3
script=$4
previous=""
[ -s "$info_file" ] && previous=$(cat "$info_file")
if [ -n "$previous" ]; then
    out=$($submit_cmd --dependency=afterany:"$previous" "$script")
elif [ "$needs_submit" = "true" ] || [ -z "$previous" ]; then
    out=$($submit_cmd "$script")
fi
echo "$out"
echo "$out" | grep -oE '[0-9]+' | tail -n 1 > "$info_file"
