"""Running a plan: work folders, do's, waiting, recovery.

session.py     start_run / continue_run / dry_run: the entry points (a run = store the plan, then
               continue)
engine.py      the Engine: dependency order, procs, max_async, state moves, failures
starting.py    a workpackage's start: environment, prepares, its commands to a shell or a job
ending.py      how a workpackage ended, recorded (done, waiting, failed) with its commands
settings.py    what a run is told (Settings) and tells at its end (Summary)
restart.py     what a stopped bench left: recovery from the shells' records, the interruption
shared.py      shared do's (once per step, when all its workpackages reached them)
waiting.py     workpackages waiting for a done file: files, time limit, the scheduler's job states
materialise.py a workpackage's first start: environment, folders, filesets, substitutesets
workdir.py     folder layout and links;  files.py  copy / link / substitute
commands.py    a step's do's for one workpackage, substituted (cycles, active=, shared stops)
script.py      the shell script running them, its markers and outcomes
runner.py      a launcher's shells running those scripts, their time limits and stops
remove.py      `bench remove`;  progress.py  the progress display
logprogress.py a running workpackage's progress read from its log (the meta block's progress)
"""
