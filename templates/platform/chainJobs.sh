#!/usr/bin/env bash
# caramel: submit a SLURM job that waits for the job submitted before it from the same shared folder.
#
#   chainJobs.sh JOBID_FILE SBATCH_ARGS...     e.g. (in a shared do)  $chainjob_script $shared_job_info $submit_script
#
# JOBID_FILE holds the id of the previous job of the chain (first line); when it exists the new job gets
# --dependency=afterany:<that id>. Afterwards the new job's id (the last word sbatch printed) replaces it.
# Prints the sbatch command and, after "RETURN: ", what sbatch answered; sbatch's exit code is kept.

if (( $# < 2 )); then
    echo "$0: needs a job-id file and the sbatch arguments (got $# arguments)" >&2
    exit 1
fi

id_file=$1
shift

cmd=(sbatch)
if [[ -f $id_file ]]; then
    read -r previous < "$id_file"
    cmd+=("--dependency=afterany:${previous}")
fi
# the remaining arguments are passed word by word, as the caller's shell split them
cmd+=("$@")

echo "${cmd[*]}"
answer=$("${cmd[@]}")
status=$?
(( status == 0 )) || exit "$status"

echo "RETURN: $answer"
echo "${answer##* }" > "$id_file"
exit 0
