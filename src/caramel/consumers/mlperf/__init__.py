"""MLPerf submissions: LoadGen's logs and the trainers' MLPerf logs of caramel runs gathered into
MLCommons' submission tree, checked as its submission checker checks it, pushed to a git repository
(docs/mlperf.md, "Submissions")."""
