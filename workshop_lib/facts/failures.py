r"""Failure signatures of Megatron-LM runs on Kubernetes: one table, read by ``monitor.diagnose``.

Each row names a failure (``label``), the log lines that show it (``patterns``, regular
expressions searched in each line), what it means and what to do. The patterns were written from
real output quoted in public issue threads (NVIDIA/Megatron-LM, NVIDIA/NeMo, NVIDIA/nccl,
aws/aws-ofi-nccl, pytorch/pytorch, kubeflow) and from the launch guides' "Common Launch Issues"
and troubleshooting tables (``docs/sources.md``); ``tests/fixtures/logs/README.md`` lists the sources of each fixture.

The patterns were then grown, and the roles set, from the development split of
``tests/fixtures/diagnose_corpus`` (unmodified excerpts of real failures: other Megatron forks,
DeepSpeed, megatron-core, NeMo, torchrun/srun/mpirun/Ray prefixes); a held-out quarter of it
measures how well they generalise (``benchmarks/results/diagnose*.md``). ``role`` says where a
failure sits in a chain of events, so that the verdict's primary root cause is the first *cause*,
not the last *symptom* every other rank prints.

Lines matching :data:`BENIGN_PATTERNS` are never findings (NCCL prints several scary-looking INFO
lines on every healthy start). ``nan_loss`` and ``skipped_iterations`` are also derived from parsed
iteration lines, with the grace period :data:`SKIP_GRACE_ITERATIONS` for fp16 loss-scale warm-up.

Every pattern must run in time linear in the line (a log line may be 1 MiB, and Python's engine
backtracks): a pattern never starts with an unbounded repeat that can start anywhere in a run
(``\w+Error`` becomes ``(?<=\w)Error``, ``\d+/\d+`` becomes ``(?<!\d)\d+/\d+``), two repeats that
can take the same characters never follow each other (``[\w.-]*\d+`` becomes ``[\w.-]*\d``), and a
``.*`` after a literal that may repeat on the line is tempered (``(?:(?!Error: ).)*``) so each start
scans only to the next. ``tests/test_hostile_inputs.py`` reads lines built against each of these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FailureSignature:
    label: str
    patterns: tuple[str, ...]  # regular expressions, searched in each line (case-sensitive)
    explanation: str
    fix: str
    severity: str = "error"  # "error" | "warning"
    # Only with these, if set: the finding is dropped when another line of the log matches one of
    # ``unless`` (e.g. "plugin not found" on one library name while NET/OFI did load). Every label's
    # ``unless`` is tried on each line that holds any of their literals (the NCCL lines of every
    # healthy multi-rank log), so a pattern added here costs on all of those lines.
    unless: tuple[str, ...] = ()
    # Where the failure sits in a chain of events, for choosing the primary root cause:
    # "cause" (a fault of its own: OOM, a bad flag, a dead GPU), "context" (a degraded set-up that
    # can explain later errors but is rarely fatal by itself: no EFA plugin, TCP sockets) or
    # "symptom" (what every other rank prints after the cause: collective timeouts, peers gone).
    role: str = "cause"


# fp16 runs skip iterations while the dynamic loss scale comes down from 2**32: normal at the start.
SKIP_GRACE_ITERATIONS = 100
# ... and after it, now and then: the scaler raises the scale after each quiet stretch (1,000 steps by
# default) until a step overflows, which is skipped and halves it again, about one step in a
# thousand. A run whose steps *keep* overflowing skips in several reports, and many more of them: at
# least SKIP_LATE_REPORTS lines (Megatron's per-interval counts, DeepSpeed's OVERFLOW lines) and at
# least SKIP_LATE_SHARE of the steps the log covers after the warm-up.
SKIP_LATE_REPORTS = 2
SKIP_LATE_SHARE = 0.01
# Within the warm-up too, a dynamic scaler cannot skip step after step at one scale: Megatron's and
# DeepSpeed's halve it on every overflow once their hysteresis (2 overflows by default) is spent, and
# the tracker is only reset when the scale grows. So SKIP_STUCK_REPORTS iteration lines in a row that
# each report skipped steps at the same scale (one of LOSS_SCALE_COLLAPSE or more; below it the
# scale has collapsed, which is nan_loss) mean a fixed --loss-scale that every step overflows: no
# update is ever applied, from the first iteration on.
SKIP_STUCK_REPORTS = 3

# Trainers that check each step themselves and throw away an update whose gradient norm or loss is not
# finite, saying so in a warning: ESPnet2's "The grad norm is nan. Skipping updating the model.",
# ESPnet1's "grad norm is nan. Do not update model." and its "loss (=nan) is not correct" (which also
# refuses a CTC loss past its 10,000 threshold), verl's "WARN: grad_norm is not finite: nan". One such
# step is routine in CTC training (an utterance shorter than its transcript gives an infinite loss),
# so a log is named nan_loss only when it holds NONFINITE_STEP_REPORTS of them. "is inf" is left out:
# with AMP the grad scaler's own overflow probing gives an infinite norm now and then, as fp16 skips
# do (SKIP_GRACE_ITERATIONS).
NONFINITE_STEP_PATTERN = (
    r"\b[Gg]rad norm is (?:tensor\()?nan\b|\bloss \(=[^)]*\) is not correct\b"
    # verl's actor and critic skipping an update ("WARN: grad_norm is not finite: nan"), each rank
    r"|\bgrad_norm is not finite: nan\b"
)
NONFINITE_STEP_REPORTS = 3

# GPU utilisation below this (percent SM activity) is flagged by ``workshop monitor gpu``.
LOW_GPU_UTIL_PERCENT = 50.0

# The EKS launch guide's likely causes of low SM utilisation (docs/sources.md), in the order to check them.
LOW_GPU_UTIL_CAUSES: tuple[str, ...] = (
    "Data loading bottleneck: raise --num-workers, keep the dataset on fast storage (FSx/AMLFS or local NVMe).",
    "NCCL communication overhead: keep tensor parallelism within a node and confirm EFA is active "
    "(`workshop monitor nccl LOG`), not a TCP socket fallback.",
    "Pipeline bubble: with pipeline parallelism, raise the number of micro-batches "
    "(global batch / (micro batch x data parallel)) or use --num-layers-per-virtual-pipeline-stage.",
)

# The order in which roles are chosen as the primary root cause (see FailureSignature.role).
ROLE_ORDER: tuple[str, ...] = ("cause", "context", "symptom")

# A verdict shows this many evidence lines per finding (the first line of each rank first).
EVIDENCE_LINES = 5
# Unknown failures: at most this many error-like lines per rank, and in all.
UNRECOGNISED_PER_RANK = 3
UNRECOGNISED_MAX = 24

# fp16 dynamic loss scaling starts at 2**16 (DeepSpeed) or 2**32 (Megatron) and settles around
# 2**10..2**16 in a healthy run. A scale pushed below this means the gradients overflow fp16 even
# when barely scaled: the run is diverging (DeepSpeed then stops with "Current loss scale already
# at minimum"). Megatron's bf16 runs print a constant "loss scale: 1.0", which is not a collapse:
# the iteration-line rule needs a scale above 1 earlier in the log and skipped iterations.
LOSS_SCALE_COLLAPSE = 16.0
# Words in a file's name that say it holds settings, not data: a missing one is a refused flag
# (train_flags_invalid), never missing data (dataset_path_missing passes over paths holding them).
_SETTINGS_FILE_WORDS = r"config|search_space|hparam|hyperparam"
# A loss scale as the scalers print it, in plain or floating-point notation ("512.0", "2.0237e-320").
_LOSS_SCALE = r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
# DeepSpeed's fp16 overflow lines, whichever release printed them: "[deepspeed] OVERFLOW! Rank 0
# Skipping step. Attempted loss scale: 16, reducing to 8" (deepspeed/runtime/fp16/loss_scaler.py),
# the older "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 8.0, reducing to 4.0"
# and the fused optimizer's "Reducing dynamic loss scale from 8.0 to 4.0". The group is the new scale.
LOSS_SCALE_REDUCED_PATTERN = (
    r"(?:(?:OVERFLOW!|Overflow detected).*[Aa]ttempted loss scale: \S+,? reducing to"
    r"|[Rr]educing dynamic loss scale from \S+ to"
    # Apex's amp ("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 512.0"),
    # which prints a scale that has underflowed as far as 1e-320 in floating-point notation
    r"|[Ss]kipping step, loss scaler \d+ reducing loss scale to) " + _LOSS_SCALE
)

# A gradient norm that is NaN/Inf, in any trainer's cell ("grad norm: nan", "grad_norm: inf", a JSON
# record's "'grad_norm': nan"). On a step whose loss is finite it is fp16's dynamic scaler meeting an
# overflow, if the step was skipped; a later step with a finite norm and loss shows that it was (a NaN
# gradient applied leaves NaN weights and every later norm NaN), and such a log is no nan_loss.
NONFINITE_GRAD_NORM_PATTERN = r"\bgrad[ _]norm\b[\'\"]?\s*[:=|]?\s*[-+]?(?:nan|NaN|NAN|inf|Inf|INF)\b"
# ... and the finite cells that tell such a step from a diverged one, and show a later step was sound
FINITE_GRAD_NORM_PATTERN = r"\bgrad[ _]norm\b[\'\"]?\s*[:=|]?\s*[-+]?\d"
FINITE_LOSS_PATTERN = r"(?:\b|_)(?:lm[ _])?[Ll]oss\b[\'\"]?\s*[:=|]?\s*[-+]?\d"

# Megatron's count of NaN iterations, when it is not zero (a nan_loss pattern; the diagnoser's cheap
# NaN test also looks for it on its own, since every Megatron line carries the phrase).
NAN_ITERATIONS_PATTERN = r"number of nan iterations: +[1-9]"

# A run that stops logging: no iteration line for this many times the usual interval, and at least
# this long (checkpoint saves and evaluation legitimately pause a few minutes), while the log's last
# timestamp (or the caller's clock) moved on.
HANG_INTERVAL_FACTOR = 20.0
HANG_MIN_SECONDS = 600.0
# The end-of-log clock is the newest timestamp among this many last lines.
HANG_TAIL_LINES = 200
# A trainer's own report that some ranks have waited on a collective for a while: Horovod's stall
# inspector checks once a minute (horovod/common/stall_inspector.cc; operations.cc before 0.19). One
# report comes on healthy starts too (a rank still loading); reports at this many checks, at least
# STALL_REPORT_GAP_SECONDS apart by their timestamps and with no iteration line after the first,
# are a run that stopped.
STALL_REPORT_PATTERNS: tuple[str, ...] = (
    r"waiting for remainder of ranks for more than \d+ seconds",
    r"\[missing ranks: \d[\d, ]*\]",
    # Horovod's stall inspector by its source line (its sentence is long, and a terminal wraps it)
    r"horovod/common/stall_inspector\.cc:\d+\] ",
)
STALL_REPORTS_FOR_HANG = 2
# The run's own report that it succeeded (MLPerf's run_stop with status success, SageMaker's toolkit,
# trainers' last words). Error-like lines of such a run did not stop it (a plugin that fell back, a
# teardown that raced), so they are no unknown failure, and symptoms after the report (a rendezvous
# or an NCCL proxy torn down at exit) are not findings; a cause after it (the final save that found
# the disk full) still is.
RUN_SUCCEEDED_PATTERNS: tuple[str, ...] = (
    r'"key": "run_stop".*"status": "success"',
    r"Reporting training SUCCESS",
    r"\bTraining (?:is )?(?:finished|complete(?:d)?)(?:[.!]|\s*$)",
    r"`Trainer\.fit` stopped: `max_(?:steps|epochs)=\d+` reached",
    # torchx's report of the job's end, and NVIDIA DeepLearningExamples' last line of main()
    r"\bJob finished: SUCCEEDED\b",
    r"^Experiment ended\s*$",
)
# Hugging Face Trainer's report that its training loop ran to the end (the metrics dict of
# Trainer.train(), and the table log_metrics prints): not the whole run's success, since a save or an
# evaluation after it may still fail, so only a finding about the training loop itself gives way to it
# (a Triton cache on NFS that "may" hang the run did not).
TRAINING_LOOP_ENDED_PATTERNS: tuple[str, ...] = (
    r"\{'train_runtime': [\d.]+, '",  # (not "samples", a gate every Megatron iteration line holds)
    r"\*\*\*\*\* train metrics \*\*\*\*\*",
)
# The findings that give way when the training loop ended (or the run reported success): DeepSpeed
# warns of a Triton cache on NFS at every start on such a volume, and a run whose training went to the
# end did not fail on it. (Checked once at the end, not as an `unless`: that alternation is tried on
# every NCCL line of a healthy log.)
GIVE_WAY_TO_ENDED_TRAINING: tuple[str, ...] = ("triton_cache_shared_fs",)
# A Kubeflow operator's report that the whole job succeeded (the condition's reason in `kubectl
# describe pytorchjob`, and the event's message): every pod was placed, pulled its image and mounted
# its volumes in the end, so a FailedScheduling, a back-off or a FailedMount event beside it was
# transient (a node still joining under Karpenter). describe prints conditions before events, so
# this holds wherever in the log it stands.
# (Each starts with its literal: these join an alternation searched on many lines, where a leading
# group of kinds would be tried at every position of every line.)
KUBEFLOW_JOB_SUCCEEDED: tuple[str, ...] = (
    r"JobSucceeded\b",  # PyTorchJobSucceeded, MPIJobSucceeded, TFJobSucceeded...
    r"Job \S+ (?:is )?successfully completed\b",
)
# A launcher's report that an attempt failed and that it starts another (Ray Train's controller under
# a retry policy: the worker group's start timed out while the autoscaler was still adding GPU
# nodes), and the sign that a later attempt got its workers (Ray Train's workers setting up their
# process group). Error-like lines between a retry report and that sign were the failed attempt's,
# which the run survived: they are no unknown failure. A job that never gets its GPUs prints the
# same reports with no such sign after them, and its lines stay listed.
RETRY_REPORT_PATTERNS: tuple[str, ...] = (
    r"Retrying training worker group startup\. The previous attempt encountered the following failure:",
    r"\[FailurePolicy\] RETRY\b",
)
RETRY_RECOVERED_PATTERNS: tuple[str, ...] = (
    r"\bSetting up process group for: \S+ \[rank=\d+, world_size=\d+\]",
)
# ... and a report that comes after the failed attempt's own lines (Ray Tune's trial summary, "Training
# errored after 0 iterations at 2023-11-22 07:46:48. Total running time: 1min 2s", which a
# FailureConfig with max_failures then follows with a new attempt): when an attempt after it got its
# workers, every error-like line before the report was a failed attempt's. A last attempt that fails
# prints its own report after its workers' sign, and its lines stay listed.
RETRY_REPORT_AFTER_PATTERNS: tuple[str, ...] = (r"Training errored after \d+ iterations at ",)
# A warning the program itself later calls a false alarm: XLA's rendezvous watchdog, at error level,
# "This thread has been waiting for 10 seconds and may be stuck", then "Thread is unstuck! Warning
# above was a false-positive. Perhaps the timeout is too short." Each pair is (the warning, its
# retraction): a warning listed as an unknown failure is taken back when its retraction follows,
# and one never retracted (a thread that stays stuck: a real hang) stays listed.
RETRACTED_WARNINGS: tuple[tuple[str, str], ...] = (
    # A C++ exception that aborts a process whose CUDA driver is already unloading ("terminate called
    # after throwing an instance of 'c10::CUDAError'", then "what():  CUDA error: driver shutting
    # down", cudaErrorCudartUnloading): by CUDA's definition a call made during process shutdown, so
    # the run was already ending (an AWS SageMaker DeepSpeed sample's README: "just ignore it", the
    # model uploaded). A failure that ended the run shows before it; any other what() stays listed.
    (
        r"terminate called after throwing an instance of 'c10::(?:CUDA)?Error'",
        r"what\(\):\s+CUDA error:\sdriver shutting down",  # (\s: not the gate "error: ")
    ),
    (
        r"rendezvous\.cc:\d+\] This thread has been waiting for \d+ ?\w+ and may be stuck",
        # (up to "unstuck!": its own words, not the "Warning" of thousands of other lines, are what
        # the line's cheap pre-test looks for)
        r"rendezvous\.cc:\d+\] Thread is unstuck!",
    ),
)
# ... or one report after training had been stepping (ranks in lockstep, not still loading), with no
# step after it: a step line of any trainer (a step or iteration number, then a loss) in the last
# HANG_TAIL_LINES lines before the report, and none after it.
PROGRESS_LINE_PATTERN = r"\b(?:step|iter(?:ation)?)[\s\[\]:=#]{0,12}\d+\b.*loss\W{0,3}[-\d.]"
# fairseq's fp16 scaler ("WARNING: overflow detected, setting loss scale to: 0.25", "NOTE: gradient
# overflow detected, ignoring gradient, setting loss scale to: 2.0"). fairseq trains at scales of 1 to
# 8 in healthy runs (its FSDP example settles at 1.0; a wav2vec 2.0 fine-tune dips to 0.5 and 0.25 in
# its first epoch's warm-up, then trains a hundred epochs) and gives up at 1e-4, so only a scale below
# FAIRSEQ_LOSS_SCALE_COLLAPSE is a collapse there: gradients still overflowing fp16 after being scaled
# down to an eighth, on the way to fairseq's floor.
FAIRSEQ_LOSS_SCALE_PATTERN = (
    r"overflow detected, (?:ignoring gradient, )?setting loss scale to: " + _LOSS_SCALE
)
FAIRSEQ_LOSS_SCALE_COLLAPSE = 0.25
# A traceback a framework reports as handled: NeMo's safe_import logs "Import of quick_gelu from
# megatron.core.fusions.fused_bias_geglu failed with: Traceback ..." for an optional symbol a
# Megatron release lacks, and goes on. Python's own "Exception ignored in: <function
# _MultiProcessingDataLoaderIter.__del__ ...>" says the same of an exception raised in a finalizer
# or a callback: printed, then ignored. A traceback that is the *message* of a logging record
# ("ERROR:root:Traceback ...", "ERROR:2025-11-19 19:14:17,826:Traceback ...": logging's
# LEVEL:name:message format, as logger.error(traceback.format_exc()) prints it) was caught by the
# program, which logged it and went on; an uncaught one is printed by Python itself, with no level
# before it (a program that logs and then re-raises prints the second traceback plainly).
# multiprocessing's queue feeder thread prints the traceback of a put whose reader went away (a
# DataLoader worker feeding an iterator the epoch's end shut down: "BrokenPipeError: [Errno 32]
# Broken pipe") and stops; its first frame, in queues.py's _feed, says which traceback it is.
# multiprocessing's _run_finalizers does the same for a finalizer that raised (its temporary
# folder's clean-up: "OSError: [Errno 39] Directory not empty: '/tmp/pymp-...'") and runs the next.
# wandb's status threads (NetStatThr, ChkStopThr, IntMsgThr: a run's polls of its own wandb service)
# die with the traceback Python prints for any thread ("Exception in thread NetStatThr:", then a
# BrokenPipeError when the service went away at the end of the run); the training never depends on them.
# logging's QueueListener thread (a trainer's multi-process logging, Chinese-CLIP's) dies the same way
# when the processes feeding its queue have exited ("EOFError" from its _monitor's dequeue).
# The exception line that ends each (per rank) is no failure.
HANDLED_TRACEBACK_PATTERN = (
    r"\bImport of \w+ from [\w.]+ failed with: Traceback|\bException ignored in: <"
    r"|\bFile \"[^\"]*multiprocessing/queues\.py\", line \d+, in _feed\b"
    r"|\bFile \"[^\"]*multiprocessing/util\.py\", line \d+, in _run_finalizers\b"
    r"|\bFile \"[^\"]*logging/handlers\.py\", line \d+, in _monitor\b"
    r"|\bFile \"[^\"]*wandb/sdk/wandb_run\.py\", line \d+, in "
    r"(?:check_network_status|check_stop_status|check_internal_messages)\b"
    r"|\b(?:CRITICAL|ERROR|WARNING):[\w.\- ,:]{0,40}?:Traceback \(most recent call last\)"
    # ClassyVision's model-complexity hook warning that a model's FLOPs cannot be counted, with the
    # exception's traceback as the rest of its message; training goes on without the count
    r"|\bCould not compute FLOPs for model forward pass\. Exception:\s*$"
)
HANDLED_TRACEBACK_LINES = 40  # its exception line comes within this many lines, or it was not one
# A validation (evaluation) report. A NaN loss only there, with training steps logging a finite loss
# after it, is evaluation's own fault (an empty or broken eval batch, a bug in the eval path), not a
# diverging run: its lines are listed as an unknown failure, and nan_loss's advice (lower the
# learning rate, bf16) is not given.
VALIDATION_LINE_PATTERN = (
    r"\[val(?:idation)?\]|\b(?:val|validation|eval)[ _/](?:lm[ _])?loss\b|\bvalidation loss\b"
)
STALL_REPORT_GAP_SECONDS = 50.0
# A stack dump of live processes: py-spy's ('Thread 0x7FA6E7C01740 (idle): "MainThread"', then frames
# like "    wait (threading.py:302)"), gdb's py-bt and faulthandler's ("Traceback (most recent call
# first):"). One is taken of a run that stopped making progress, by a person or a watchdog: a log
# whose last HANG_TAIL_LINES lines hold one, with no error anywhere and no step after it, hangs.
# Without a header, STACK_DUMP_FRAMES of py-spy's frames make a dump (an excerpt cut at the top).
STACK_DUMP_PATTERNS: tuple[str, ...] = (
    r"^\s*Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active)[^)]*\): ",
    r"^\s*\(gdb\) py-bt\b",
    # faulthandler's "Current thread 0x7f.. (most recent call first):" and "Stack (...)"; not a c10
    # exception's own backtrace ("Exception raised from X at Y (most recent call first):"), which
    # is the trace of a message already printed, not a dump of a process that stopped
    r"(?:\b[Tt]hread 0x[0-9A-Fa-f]+|^\s*(?:Stack|Traceback)) \(most recent call first\):",
)
# A log that ends inside a Python traceback (a frame, then at most its source and caret lines, and
# no exception line: kubectl logs --tail, a copy cut short, a process killed while printing) is a
# crash whose exception line was lost, not a healthy log. Of the corpus's 2,777 excerpts, 100 end
# so, and none of them healthy.
# (up to two rank tags before it: "[rank0]:", "0:", "node1:", "[1,0]<stdout>:"; an exception line's
# "Name:" is none, since a tag ends in a digit or a bracket). A frame's source and caret lines are
# indented by two spaces or more after the tags; an exception line by at most one.
RANK_TAGS_PATTERN = r"^(?:(?:\[[^\]\s]*\](?:<\w+>)?|[\w.-]*\d): ?){0,2}"
TRACEBACK_FRAME_PATTERN = RANK_TAGS_PATTERN + r'\s*File "[^"]+", line \d+, in \S'
CUT_TRACEBACK_LINES = 3  # the frame is among the log's last this many non-empty lines
# ... and when that log also holds a frame whose source line raises ("    raise ValueError("), the line
# right after it that is neither indented nor a frame is that exception's message, printed without
# its "ValueError: " (another rank's stderr interleaved into it, or a copy that dropped it): listed
# first, since it says what failed where the last source line only says where.
# (not the headings a chained traceback prints between its parts)
TRACEBACK_HEADINGS: tuple[str, ...] = (
    "Traceback (most recent call last)",
    "During handling of the above exception",
    "The above exception was the direct cause",
)
RAISE_SOURCE_PATTERN = RANK_TAGS_PATTERN + r"\s{2,}raise [A-Za-z_][\w.]*\("
PY_SPY_FRAME_PATTERN = r"^\s+[\w<>.]+ \((?:[^()\s]+/)?[^()\s/]+\.py:\d+\)\s*$"
STACK_DUMP_FRAMES = 3
# A terminal (or a copy into an issue) wraps long lines, splitting a signature's words over two
# lines. When no error signature matched, each pair of the last HANG_TAIL_LINES lines whose first
# line is at least this long is read again joined (as printed, and with a space between).
UNWRAP_MIN_CHARS = 60

# filelock's debug lines for Triton's cache (DeepSpeed's autotune cache, torch inductor): a lock
# still not acquired this long after "Attempting to acquire" (by the log's clock) is a stuck cache.
TRITON_LOCK_ATTEMPT_PATTERN = r"Attempting to acquire lock (\d+) on (\S*(?:triton|torchinductor)\S*)"
TRITON_LOCK_ACQUIRED_PATTERN = r"Lock (\d+) acquired on"
TRITON_LOCK_WAIT_SECONDS = 300.0
# A finished log whose last lines are this many processes all waiting on one such lock, none of them
# getting it, ended while they waited (one waiter alone may be a log cut mid-compile).
TRITON_LOCK_CONTENDERS = 2

# DeepSpeed's launcher killing the other ranks once one has exited with a non-zero status
# (deepspeed/launcher/launch.py sigkill_handler). When no rank printed any error before (or after)
# it, the rank that exited died without a word: a signal, most often the kernel's OOM killer (a
# Python exception prints its traceback; a segmentation fault in a rank says nothing either, but is
# rarer), so the log is named host_oom_killed with that reasoning in its explanation.
LAUNCHER_KILL_PATTERN = r"sigkill_handler\] Killing subprocess \d+"
SILENT_KILL_EXPLANATION = (
    "No rank printed an error before DeepSpeed's launcher killed the others, so the rank that "
    "stopped died without a word: killed by a signal, most often the kernel's OOM killer (a "
    "segmentation fault is silent too; the launcher's 'exits with return code = -9' or '-11', "
    "or dmesg on the node, tells them apart). "
)

# A symptom (a collective timeout, a peer gone, a rendezvous that timed out) names no cause of its own:
# when an exception no signature knows was raised before it (a rank's FileNotFoundError, then the
# others' watchdog timeout), the verdict keeps the symptom as its label but shows those lines as what
# came first, since the cause is most likely among them. Only exception messages ("SomeError: ..."),
# not the aborts a symptom prints itself ("terminate called after throwing ... DistBackendError"), and
# the CUDA/HIP runtime's own error text, which a c10::Error abort prints in lower case ("what():  CUDA
# error: unspecified launch failure" on the rank that died before the others' watchdog timeout).
EARLIER_EXCEPTION_PATTERN = r"\b[A-Z]\w*(?:Error|Exception): \S|\b(?:CUDA|HIP) error: \S"
EARLIER_MAX = 3

# torch finding a GPU newer than every architecture its build holds kernels for ("NVIDIA GeForce RTX
# 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation."): a
# UserWarning, but nothing runs on that GPU ("no kernel image is available" at the first kernel); the
# fix is a build for that architecture. (Its gate is the words after the architecture: with
# "compatible" in it, every line that says "compatible" would try the pattern.)
GPU_NEWER_THAN_BUILD_PATTERN = r"\bCUDA capability sm_\d+ is not\b.{0,20} the current PyTorch installation\b"

# Lines that look like a failure when no signature explains it (``unrecognised`` in the verdict).
ERROR_LIKE_PATTERNS: tuple[str, ...] = (
    # RuntimeError:, ncclInternalError:, KeyboardInterrupt:; not C++'s scope "c10::Error::Error(" in a
    # frame of a c10 backtrace (the message above the trace says whether it was an error or a warning),
    # nor a name joined to what follows ("TrackUserError:context_managers.TrackUserError", an AzureML
    # driver's injector options): an exception's message is set off by a space, or ends the line
    r"(?:Error|Exception|Interrupt):(?![:\w])",
    r"^\s*(?:\S+\s+)?(?:[A-Za-z_.]+)?(?:Error|Exception)\s*$",  # a bare "AssertionError" line
    # an exception class a C extension names in lower case, printed with its module as Python prints
    # any uncaught exception ("cv2.error: OpenCV(4.12.0) ...", "struct.error: unpack requires ...")
    # (".error:" spelt out: its gate, not the "error:" of every "gai error: -3" line)
    r"^[a-z_][a-z0-9_.]*\.error:\s",
    r"\bNCCL WARN\b",
    r"\b(?:srun|sbatch|salloc|slurmstepd|mpirun|pdsh|kubelet|bash|sh): .*?\berror\b",
    # ... a shell's syntax error in a command a launcher built (pdsh exporting a variable whose value
    # has parentheses), in a Chinese locale too ("bash: -c: 行 0: 未预期的符号“(”附近有语法错误")
    r"\bbash: (?:-c: )?行 \d+: .*语法错误",
    # not the severity column Cloud Logging gives every stderr line of a Vertex AI job ("ERROR
    # 2022-01-26 14:19:34 +1100  workerpool0-0  31%|... "): what follows it is judged on its own
    r"\bERROR\b(?!\s*\|\s*stderr)(?!\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\s+workerpool\d+-\d+\b)",
    r"\b(?:FAILED|FATAL|Fatal|fatal error)\b",
    r"\bCUDA (?:error|failure)\b|\bTest failure\b",  # CUDA samples, nccl-tests
    r"Segmentation fault|core dumped|\bAborted\b|terminate called",
    r"\bThe NVIDIA driver on your system is too old\b",
    # ... and torch elastic's ProcessFailure repr ("exitcode=-7"), DeepSpeed's launcher giving up on a
    # rank ("[launch.py:321:sigkill_handler] [...] exits with return code = -7"), whatever its prefix
    r"[Ee]xit(?:ed with)? (?:code|status)[: ]+[1-9]|exitcode\s*[:=]\s*-?[1-9]",
    r"\bexits with return code = -?[1-9]",
    r"failed \(exitcode|ChildFailedError|ProcessExitedException",
    r"\bfailed with (?:return|exit) (?:code|status) [1-9]",  # a tool's own exit ("nvidia-smi failed with ...")
    r"Failed to initialize NVML",  # nvidia-smi/DCGM: driver and library versions differ, or no driver
    # torchrun's agent stopped from outside (SIGHUP from a closed terminal, SIGTERM from a scheduler,
    # Ctrl-C): the run ended before its last step, so this is the line to show when nothing else is
    r"\bReceived (?:\d+|Signals\.SIG[A-Z]+) death signal, shutting down workers",
    # the kernel's NVIDIA module refusing a user-space driver of another version (an upgrade without
    # a reboot or a module reload): the same mismatch, as the kernel log says it
    r"\bNVRM: API mismatch: the client has the version\b",
    # Open MPI's boxed help texts for a launch that cannot start: no PMI under srun, no daemons
    r"\bOMPI was not built with SLURM'?s PMI support\b",
    r"\bORTE was unable to reliably start one or more daemons\b",
    r"\b[OP]RTE has lost communication with a remote daemon\b",  # a node's daemon or its TCP link died
    r"\bgot exception in [\w ]{1,60}: ",  # torchft's manager ("got exception in pg configure: ...")
    r"\bmpirun was unable to launch the specified application\b",
    # a rank that called MPI_Abort (Open MPI's box, MPICH's one line) and a rank that died under the
    # launcher (Open MPI's mpirun, MPICH/Intel MPI's Hydra): the launchers' ChildFailedError
    r"\bMPI_ABORT was invoked on rank \d+ in communicator\b",
    # Open MPI's errors-are-fatal handler ("*** An error occurred in MPI_Init_thread", "*** on a NULL
    # communicator", "*** MPI_ERRORS_ARE_FATAL ..."): an MPI call failed and the process aborts
    r"\*\*\* An error occurred in MPI_\w+",
    r"\bapplication called MPI_Abort\(",
    r"\bBAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\b",
    r"\bmpirun detected that one or more processes exited with non-zero status\b",
    r"\bPrimary job\s+terminated normally, but \d+ process(?:es)? returned\b",
    r"NVIDIA-SMI has failed because",  # "... it couldn't communicate with the NVIDIA driver"
    # Slurm's daemons at error level, in their own log files ("[2019-09-24T10:10:06.901] [321.0]
    # error: pyxis: couldn't mkdir ..."): no "srun:"/"slurmstepd:" in front there
    r"^\s*\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\] (?:\[[\d.]+\] )?error: ",
    r"\bUnable to register MR\b|\bfi_mr_reg\w* failed",  # libfabric cannot register (GPU) memory
    # NVSHMEM's check of a call ("team_internal.cpp:786: non-zero status: 7 Mapping ... failed")
    r"\.(?:cpp|cu|c):\d+: non-zero status: \d+",
    # a CUDA driver API call's check that exits the process (torch_memory_saver: "CUresult error: 1
    # (invalid argument) file=csrc/core.cpp func=free")
    r"\bCUresult error:\s\d+ \(",  # (\s keeps "CUresult error:" its gate; "error: " is in every error line)
    # aws-ofi-nccl refusing a connection whose two ends see different numbers of EFA rails ("NET/OFI
    # Unexpected number of remote rails for dev 0. Expected 3 but got 2", then ncclInternalError):
    # pods given fewer EFA devices than their node has can be given different ones. (\s+: the gate is
    # then "Unexpected number", not "umber of", which every Megatron iteration line holds)
    r"\bUnexpected number\s+of\s+remote (?:control )?rails for dev \d+",
    # the ROCm runtime (HSA) aborting the process on a GPU's bad memory access ("Memory access fault
    # by GPU node-1 (Agent handle: 0x55...) on address (nil). Reason: Page not present or supervisor
    # privilege."; its "GPU Hang" twin is gpu_xid_error), and HIP finding no kernel built for the
    # GPU's architecture ("hipErrorNoBinaryForGpu: Unable to find code object for all current
    # devices!"): the ROCm twins of an illegal address and a missing arch
    r"\bMemory access fault by GPU node-\d+\b",
    r"\bhipError[A-Z]\w+: ",
    # torch 0.x-1.x's check of a CUDA call ("THCudaCheck FAIL file=... line=25 error=46 : all
    # CUDA-capable devices are busy or unavailable"), whatever the error number
    r"\bTHCudaCheck FAIL\b",
    # Kubeflow's training-operator failing to create the Volcano PodGroup of a gang-scheduled job (a
    # warning in its own log: "Sync PodGroup kubeflow/x: unable to create PodGroup: ... the server
    # could not find the requested resource (post podgroups.scheduling.volcano.sh)", Volcano's CRDs
    # not installed): the job's pods are never created
    r"\bunable to create PodGroup: ",
    # a job script whose launcher is missing or empty (torchrun not on PATH, its variable unset), so
    # the shell runs the launch line's first flag as a command ("slurm_script: line 42: --standalone:
    # command not found"); a missing helper ("lspci: command not found") is a healthy set-up's noise
    r": line \d+: --[\w-]+: command not found\b",
    r"^\s*Exception has occurred: \w+",  # an exception as VS Code's debugger (debugpy) reports it
    # a TPU VM whose chips another process holds (libtpu's initializer, logged at info level: "libtpu.so
    # already in use by another process. Run "$ sudo lsof -w /dev/accel0" ..."): this process gets no TPU
    r"\blibtpu\.so already in use by another process\b",
    GPU_NEWER_THAN_BUILD_PATTERN,
    # TensorFlow's and XLA's stream executor finding an older cuDNN at run time than the build's
    # ("Loaded runtime CuDNN library: 7.4.1 but source was compiled with: 7.6.4.  CuDNN library
    # major and minor version needs to match ..."; XLA: "... needs to have matching major version
    # and equal or higher minor version"), logged at level E with no exception after it: every
    # convolution then fails. Read from the second sentence, which a terminal's wrap leaves whole
    r"\bCuDNN library (?:major and minor version needs to match|needs to have matching major version)\b",
    # a CUDA kernel's device-side assert ("... thread: [0,0,0] Assertion `ind >=0 && ...` failed."),
    # also when a terminal wrapped it before its closing backquote
    r"\bAssertion `[^`]*(?:` failed|$)",
    # Transformer Engine finding no attention backend for the inputs (its DEBUG selection log says
    # which setting disabled each one): the layer cannot run
    r"\bSelected backend = NoBackend\b",
    # glog/absl's CHECK in C++ (XLA, TensorFlow, PyTorch's c10): fatal by definition, and the process
    # aborts after its stack trace ("F0105 23:50:34.026692 34204 nccl_all_reduce_thunk.cc:175] Check
    # failed: reduction_kind.has_value()", then "*** Check failure stack trace: ***")
    r"\.(?:cc|cpp|h):\d+\] Check failed: ",
    r"\*\*\* Check failure stack trace: \*\*\*",
    # IPython's (Jupyter's) header of an uncaught exception's traceback, the exception's name first
    # ("ResourceExhaustedError                    Traceback (most recent call last)"): the message
    # line comes only at the traceback's end, which a pasted excerpt often cuts off
    r"^\s*\w+(?:Error|Exception|Interrupt)\s{2,}Traceback \(most recent call last\)",
    r"^make(?:\[\d+\])?: \*\*\* ",  # make giving up (Megatron builds its dataset helpers with make)
    # glog's error level in Go (Kubernetes controllers, operators, device plugins). Only .go files:
    # the gate ".go:" is rare in training logs, where ".py:" and ".cpp:" fill warnings and NCCL lines
    r"(?:^|\s|\])E\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]*?\.go:\d+\] ",  # after a collector's prefix too
    r"\bWARN (?:(?!\bWARN ).)*\b(?:[Ff]ailed|[Ee]rror|[Cc]ouldn'?t|[Uu]nable)\b",  # NCCL's "WARN ", not "[WARNING]"
    # a Kubernetes event of type Warning whose reason is a failure (`kubectl describe`: FailedCreate,
    # FailedMount, FailedAttachVolume, FailedCreatePodSandBox...), in its column layout
    r"^\s*Warning {2,}(?:Failed\w*|\w+Error) {2,}",  # (UnexpectedAdmissionError: a device plugin's refusal)
    # nccl-tests' check of an NCCL call ("NCCL failure all_reduce.cu:95 'unhandled cuda error'")
    r"\bNCCL failure \S+\.cu:\d+ '",
    # the API server refusing what kubectl sent ('The Pod "w-0" is invalid: ...', "Error from server
    # (NotFound): ...")
    r"^\s*The [\w.]+ \"[^\"]+\" is invalid: ",
    r"^\s*Error from server \(\w+\)",
    # ... and the API server failing to call an admission webhook ('Internal error occurred: failed
    # calling webhook "mjobset.kb.io": failed to call webhook: Post ...: context deadline exceeded'):
    # the object (a JobSet, a PyTorchJob) was never created
    r"\bfailed calling webhook \\?\"",
    # a log record at error level in the structured forms Go programs write: zap's JSON (one line,
    # or pretty-printed with the level on its own line) and logrus's key=value (runc, containerd)
    r'"level":\s?"error"',
    r"\blevel=error\b",
    # ssh refusing the key an MPI launcher logs in with (MPIJob's launcher, mpirun over ssh)
    r"\bPermission denied \((?:publickey|password|keyboard-interactive|gssapi-\w+|hostbased)[\w,-]*\)",
    # an exception whose class says no "Error" but lives in a module of errors
    # ("triton.runtime.errors.OutOfResources: out of resource: shared memory")
    r"^\s*(?:[A-Za-z_]\w*\.)+errors\.[A-Z]\w*(?:\(\w+\))?: ",
    r"^\s*(?:[A-Za-z_]\w*\.)+exceptions\.[A-Z]\w*(?:\(\w+\))?: ",
    # the CUDA samples' check of a runtime call ("Failed to allocate device vector A (error code
    # forward compatibility was attempted on non supported HW)!"), the GPU operator's validator
    r"\(error code [^)]+\)!",
    # a shell that cannot run the command it was given ("bash: torchrun: command not found", dash's
    # "sh: 1: torchrun: not found"); two patterns, so that each gate is selective (not "not found")
    r"\b(?:ba|z)?sh(?:: line \d+)?: [^\s:]+: command not found",
    r"\bsh: \d+: [^\s:]+: not found",
    # TensorFlow's error form ("UnknownError (see above for traceback): ncclAllReduce failed ...")
    r"(?<=\w)Error \(see above for traceback\): ",
    # the dynamic loader refusing a binary ("gpud: symbol lookup error: gpud: undefined symbol: ...")
    r": symbol lookup error: ",
    # zap's panic levels in Go operators' logs (DPANIC: a development-mode panic logged, not raised)
    r"\bD?PANIC\b",
    # DeepSpeed's launcher stopping every rank because one exited with an error (on success, and
    # for no other reason, it kills nothing): the failure is that rank's, whatever it printed
    LAUNCHER_KILL_PATTERN,
    # a Go program's panic (operators, schedulers, node agents), bash's `set -u` stopping a script on
    # an unset variable, and an MLPerf run that stopped without reaching its target
    r"^\s*panic: \S",
    r": line \d+: [\w-]+: unbound variable\s*$",
    r'"key": "run_stop".*"status": "aborted"',
    # a command-line tool catching its subcommand's exception and printing it before its usage
    # (xtuner's "WARNING: command error: 'No module named ...'!")
    r"\bcommand error: '",
    # Intel oneCCL's error level ("|CCL_ERROR| global.cpp:150 getenv_local_coord: condition ... failed")
    r"\|CCL_ERROR\|",
    # TensorFlow's C++ log at error and fatal level ("2019-07-07 06:48:49.161736: E
    # tensorflow/core/common_runtime/ring_alg.cc:279] Aborting RingReduce ...")
    r"\d: E [\w/.-]+\.(?:cc|h|cpp):\d+\] ",
    r"\d: F [\w/.-]+\.(?:cc|h|cpp):\d+\] ",
    # ... and torch's C++ log at error level, in c10's glog-like form ("[rank12]:[E329 10:59:19.863283463
    # ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with ...") and torch 1.x's ("[E
    # ProcessGroupGloo.cpp:138] ..."): no healthy log in the corpus has one (the first gated on ".cpp:",
    # its only literal of three characters or more)
    r"\[E\d{3,4} \d\d:\d\d:\d\d\.\d+ (?:\d+ )?\w+\.cpp:\d+\] ",
    r"\[E \w+\.(?:cpp|cc|h):\d+\] ",
    # Ray's report of a worker that died of something other than its own clean exit ("The actor is
    # dead because its worker process has died. Worker exit type: SYSTEM_ERROR ... There are some
    # potential root causes. (1) ... OOM killer ... (2) ray stop --force ... (3) ... SIGSEGV"): it
    # names three causes itself, so it is a failure to show, not one to name
    r"\bWorker exit type: (?:SYSTEM_ERROR|USER_ERROR)\b",
    # ... and Ray's GCS marking a node dead mid-run (a host lost, preempted or deleted: "The node
    # with node id: ... has been marked dead because the detector has missed too many heartbeats
    # from it"), a warning in Ray's words
    r"\bhas been marked dead because the detector has missed too many heartbeats\b",
    # JAX whose GPU backend could not start ("CUDA backend failed to initialize: ...
    # CUDA_ERROR_NOT_INITIALIZED"): it says so at warning level and carries on on the CPU, so a
    # multi-host GPU job lists CpuDevice where its GPUs should be
    r"\bCUDA backend failed to initialize: ",
    # PaddlePaddle 1.x's exception for every failed check of its C++ core ("paddle.fluid.core.EnforceNotMet:
    # unhandled cuda error at [.../nccl_helper.h:93]"), named without "Error"
    r"\bEnforceNotMet: ",
    # ... and PaddlePaddle's launcher reporting the trainers that died (its logger's prefix may be cut)
    r"\bABORT!!! Out of all \d+ trainers, the trainer process with rank=",
    # the container runtime refusing the image's entrypoint, built for another CPU architecture (an
    # arm64 image on x86 GPU nodes, or the other way): runc's whole output, in its older
    # ("standard_init_linux.go:228: exec user process caused: exec format error") and newer ("exec
    # /usr/bin/python: exec format error") wordings; nothing in the pod ran, so it is a failure
    r"\bexec format error\b",
    # Hydra's report that the task function raised ("Error executing job with overrides: [...]"), and
    # its instantiate() naming the class whose constructor raised ("Error in call to target
    # 'autrainer.datasets.speech_commands.SpeechCommands':"), with that exception on the next line in
    # its repr form ('ValueError("Directory ... does not exist ...")'), which has no "Error:"
    r"\bError executing job with overrides: \[",
    r"\bError in call to target '[\w.]+':",
    RANK_TAGS_PATTERN + r"\s*[A-Z]\w*(?:Error\(|Exception\()[\'\"]",
)
# Error-like lines that a finding explains: when the label is found, they are not listed as an
# unknown failure beside it. NCCL skipping an HCA it cannot open is why it then uses sockets.
EXPLAINED_BY: dict[str, str] = {
    "nccl_socket_fallback": r"NCCL WARN (?:Call to ibv_open_device failed|NET/IB ?: ?Unable to open device)",
}

# Error-like at first sight, but part of healthy output.
NOT_ERROR_LIKE_PATTERNS: tuple[str, ...] = (
    r"\[WARNING\]",  # DeepSpeed's op report and torchrun's OMP_NUM_THREADS notice
    r"^\s*(?:\[\w+\]:?\s*)?File \"",  # traceback frames: the exception line says more
    # ... and a frame's source line that raises with no message of its own ("    raise EOFError"):
    # the exception line after it says the same (a traceback cut before it is listed by its last
    # source line all the same, CUT_TRACEBACK_LINES)
    r"^\s{2,}raise [A-Za-z_][\w.]*\s*$",
    # (not torch finding a driver too old for its CUDA: it says so as a UserWarning, then runs nothing
    # on the GPU)
    # (nor a GPU newer than every architecture the build holds kernels for, when the warning's message
    # shares its line)
    r"UserWarning(?!: CUDA initialization: The NVIDIA driver on your system is too old|:\s*\S.*?"
    + GPU_NEWER_THAN_BUILD_PATTERN
    + r")|FutureWarning|DeprecationWarning",
    r"Error\(s\) in loading state_dict for .*:$",
    # TensorFlow's S3 file system probing for an object that does not exist yet (a checkpoint or an
    # event file before its first write) logs each 404 at level E; an input that is really missing
    # fails later with an error of its own (NotFoundError)
    r"/s3/aws_logging\.cc:\d+\] No response body\. Response code: 404\b",
    # Environment Modules failing a `module load` in a job script ("ERROR: Unable to locate a modulefile
    # for 'anaconda'"; v3's "ModuleCmd_Load.c(213):ERROR:105: Unable to locate ..."), as Lmod's "The
    # following module(s) are unknown" is no failure line: the script goes on, and what needed the
    # module fails later with lines of its own
    r"\bERROR(?::\d+)?: Unable to locate a modulefile for '",
    # torch.compile failing on a frame and running it eagerly instead (suppress_errors): dynamo logs
    # the compiler's error at warning level and training goes on; a failure it does not absorb is raised
    r"\bW\d{4} [\d:.]+\s+\d+ (?:\S*/)?torch/_dynamo/convert_frame\.py:\d+\]",  # (path relative or not)
    # TensorFlow's TPU rewrite listing, at error level, ops it would not run there ("ERROR:tensorflow:
    # Operation of type Placeholder (module_apply_tokens/input_ids) is not supported on the TPU.
    # Execution will fail if this op is used in the graph."): a TF-Hub module's unused inputs, pruned
    # from the graph (the Cloud TPU BERT colab trains on after them); an op that is used fails later
    # with an error of its own
    r"\bis not supported on the TPU\. Execution will fail if this op is used in the graph\.",
    # ModelScope's hub client logging a 404 before it raises ("[ERROR:modelscope] The request model:
    # Qwen/Qwen2___5-0___5B-Instruct does not exist!", hub/errors.py's handle_http_response): ms-swift
    # and its tutorials catch the raise and load the model from the local cache, then train; a lookup
    # nobody catches ends in the raise's own exception line ("HTTPError: The request model: ...")
    r"\[ERROR:modelscope\] The request model: \S+ does not exist!",
    # a metric whose name ends in "Error" and whose value is a number ("Generation KL Error: 0.0004",
    # "Mean Squared Error: 0.02"): a space before "Error", unlike an exception's name ("KeyError: 0")
    r" Error: [-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?%?\s*$",
    # a line that takes back an earlier warning (RETRACTED_WARNINGS: XLA's "Thread is unstuck!", the
    # what() of an abort while the CUDA driver unloads) is never the failure itself
    *(retraction for _, retraction in RETRACTED_WARNINGS),
)

# Lines that look alarming but are part of every healthy start.
BENIGN_PATTERNS: tuple[str, ...] = (
    r"Failed to find ncclCollNetPlugin",  # no CollNet (SHARP) plugin: expected on EFA
    r"Failed to find ncclNetPlugin_v\d+ symbol",  # NCCL probing older plugin ABI versions
    r"Failed to find ncclTunerPlugin",
    r"PROFILER/Plugin: Could not find",
    r"NVLS multicast support is not available",  # GPUs without NVSwitch multicast: NCCL just skips NVLS
    r"TUNER/Plugin: (Plugin load|Could not find)",
    # c10d tries IPv6 first; a name with only an IPv4 address warns (gai -2/-5), then connects over
    # IPv4. (-3, "Temporary failure in name resolution", is DNS not answering: a real failure.)
    # (Not when the host is a Slurm hostlist like "node[01,05]": master_addr_unresolved names that.)
    r"The IPv6 network addresses of \((?![^,]*\[[\d,-]+\])[^,]*, \d+\) cannot be retrieved \(gai error: -[25]\b",
    # PMIx's shared-memory store under Slurm + Open MPI: printed on healthy runs (PMIX_MCA_gds=hash
    # silences it)
    r"PMIX ERROR: ERROR in file gds_ds12_lock_pthread\.c",
    # NCCL probing for InfiniBand in an image without rdma-core (newer releases say it at INFO): what
    # it can cost, sockets between nodes, has its own finding (nccl_socket_fallback)
    r"\bWARN Failed to open libibverbs\.so",  # NCCL 2.1's "misc/ibvwrap.cu:60 WARN" too
    # SHARP finding its streaming-aggregation tree taken: it goes on with the low-latency tree
    r"comm\.c:\d+\] ERROR Failed to lock SAT tree\b",
    # NCCL's RAS service (2.24+) binding its own client port: several processes on a node contend for
    # it, and RAS alone goes without; the job's sockets are others (a bootstrap port clash is EADDRINUSE)
    r"ras/client_support\.cc:\d+ NCCL WARN Call to bind failed: Address already in use",
    # NCCL's proxy service thread losing its sockets while a communicator is destroyed or aborted at
    # exit (one per rank and communicator): a rank that died is named by what its peers print besides
    r"proxy\.cc:\d+ NCCL WARN \[Service thread\] (?:Accept failed\b|Could not receive type from localRank \d+, res=\d+, closed=0\b)",
    r"proxy\.cc:\d+ NCCL WARN \[Proxy Service \d+\] Failed to execute operation Close from rank \d+\b",
    # aws-ofi-nccl asking NCCL for its version (to decide on NVLS) through a symbol older NCCLs lack
    r"NET/OFI Could not find ncclGetVersion symbol",
    # Open MPI's HCOLL collectives finding no InfiniBand HCA: MPI falls back to its other
    # collective components (the job's own traffic is NCCL's)
    r"mca_coll_hcoll_comm_query\(\) Hcol library init failed",
    # TensorFlow's two famous error-level lines of healthy runs: a CUDA library's factory registered
    # twice at import (TF 2.11+), and grappler's layout optimizer skipping a graph
    r"Unable to register cu(?:DNN|FFT|BLAS) factory: Attempting to register factory",
    r"meta_optimizer\.cc:\d+\] layout failed: ",
    # SHARP with no Aggregation Manager to reach: NCCL goes on without in-network reductions
    r"Failed to connect to Aggregation Manager \(sharp_am\)",
    # ... in its other wordings: libsharp's "No Aggregation Manager (sharp_am) detected", NCCL's SHARP
    # plugin unable to create its job, and NCCL saying it goes on over point-to-point instead
    r"No Aggregation Manager \(sharp_am\) detected",
    r"SHARP coll init error: Cannot create SHArP job",
    # libsharp's own lines when the fabric has no SHARP resources left for the job ("ERROR SHArP
    # Job init error: No resource", job error -35): NCCL's CollNet is then off, as above
    r"\] ERROR (?:SHArP Job init error: No resource|sharp_get_job_data_len failed: Job error\(-?\d+\)"
    r"|Job error in sharp_get_job_data_len\.)",
    r"Cannot initialize CollNet, using point-to-point network instead",
    # NCCL's socket connect timing out once and retrying ("retrying (1/34) after sleep for 100 msec"):
    # NCCL later printed it at INFO (NVIDIA/nccl#1618); connects that run out of retries fail with
    # their own error lines
    r"NCCL WARN socketPollConnect poll\(\) failed, ret \d+, error Connection timed out",
    # Google's gIB NCCL set-up script in an image without pciutils: it goes on with its defaults
    r"/gib/scripts/set_nccl_env\.sh: line \d+: lspci: command not found",
    # the PyTorch profiler's CUPTI client registered from another thread than the one it initialized
    # in (Ray Train workers with the profiler on): profiling goes on, and so does training
    r"ERROR: External init callback must run in same thread as registerClient\b",
    # Inductor's max-autotune trying a kernel config that needs more shared memory than the GPU has:
    # it prints the error and "Ignoring this choice.", and takes the next config
    r"^(?:\[rank\d+\]:)?No valid triton configs\. OutOfMemoryError: out of resource: ",
    # Google's FastSocket NCCL plugin (GCE): no CPU to pin a flow's interrupts to, and its bounded
    # retries of one flow's accept/connect before it connects (it prints "Connected after N retries")
    r"net_fastsocket\.cc:\d+ NCCL WARN (?:Cannot get incoming CPU\.|Maximum retry reached for (?:accept|connect) \d+\.)",
    # Open MPI's UCX layer declining MPI_THREAD_MULTIPLE: MPI falls back to its other transport (the
    # job's own traffic is NCCL's)
    r"pml_ucx\.c:\d+ Error: UCP worker does not support MPI_THREAD_MULTIPLE",
    # UCX watching /tmp for its fuse file system: inotify's ENOSPC is the kernel's limit of watches per
    # user (fs.inotify.max_user_watches), not a full disk, and UCX goes on without the watch
    r"inotify_add_watch\([^)]*\) failed: No space left on device",
    # Open MPI's openib transport probing an HCA it cannot query (ibv_query_device's errno, ENOSPC on
    # mlx5 with newer rdma-core): MPI leaves that device to UCX or its other transports, and the job's
    # own traffic is NCCL's. No disk is involved.
    r"btl_openib_component\.c:\d+:init_one_device\] error obtaining device attributes for \S+ errno says",
    # TensorFlow's profiler finding no CUPTI library (libcupti.so not on the library path): it logs at
    # error level and goes on without GPU tracing; the training itself is untouched
    r"cupti_tracer\.cc:\d+\] function cupti_interface_->\w+\(.*failed with error CUPTI could not be loaded",
    # RCCL (AMD's NCCL) declining its optional MSCCL++ path
    r"NCCL WARN MSCCL\+\+: Cannot enable MSCCL\+\+",
    # ... and advising "iommu=pt" on the kernel command line at every rank's start (a tuning note for
    # AMD hosts, printed by runs that then train)
    r'NCCL WARN Missing "iommu=pt" from kernel command line',
    # NCCL calling into libibverbs where the library was never loaded (no rdma-core in the image):
    # the same probe as "Failed to open libibverbs.so", worded by the wrapper
    r"\(wrap_ibv_\w+\) NCCL WARN lib wrapper not initialized",
    # the kubelet's first start on a node, logged at error level: no device-manager checkpoint yet,
    # no separate image file system, and the node object not registered yet
    r"\"Failed to read data from checkpoint\" err=\"checkpoint is not found\"",
    r"eviction manager: failed to check if we have separate container filesystem\. Ignoring\.",
    r"\"Eviction manager: failed to get summary stats\" err=\"failed to get node info: node \\\"[^\"\\]+\\\" not found\"",
    # Ray's core workers finding no metrics agent to export to (a cluster started without the
    # dashboard's agent): logged at error level by every actor, and nothing else depends on it
    r"Failed to establish connection to the metrics exporter agent\. Metrics will not be exported\b",
    # Weights & Biases' client retrying an API call the server answered with an error ("wandb: ERROR
    # Error while calling W&B API: An internal error occurred. ... (<Response [500]>)") or a
    # network error: it retries in its own thread while training goes on; a run it stops prints
    # its own traceback (BENIGN_PATTERNS begin with a literal where they can: a leading \b or ^ costs
    # every search of this alternation a little at every position of the line)
    r"wandb: ERROR Error while calling W&B API: ",
    r"wandb: Network error \(\w+\), entering retry loop\.",
    # ... and its uploader giving up on syncing part of a run ("wandb: WARNING Fatal error while
    # uploading data. Some run data will not be synced, but it will still be written to disk."):
    # the run's own files are whole, and training goes on
    # (its gate is the words after "Fatal error while ": a gate of "wandb: ..." would be merged with
    # the one above into a bare "wandb: ", on every line wandb prints)
    r"(?<=wandb: WARNING Fatal error while )uploading data\. Some run data will not be synced\b",
    # FSDP gathering a full state dict and failing to clone() one tensor (out of memory, say): it
    # warns and hands back the tensor itself, and the save goes on; the OOM is in its message only
    r"Failed to clone\(\) tensor with name \S+\. This may mean that this state_dict entry could point to invalid",
    # a retraction of RETRACTED_WARNINGS (logged at the warning's own error level)
    *(retraction for _, retraction in RETRACTED_WARNINGS),
    # Ctrl-C: torchrun relaying SIGINT (signal 2) to its workers, which stop with KeyboardInterrupt.
    # A person stopped the run; schedulers and the kubelet stop runs with SIGTERM (15), which stays
    # listed (a wall-time limit, a hang someone killed)
    r"Received 2 death signal, shutting down workers",
    r"SignalException: Process \d+ got signal: 2\s*$",
    r"Sending process \d+ closing signal SIGINT\b",
    r"KeyboardInterrupt\s*$",
)

# The start of a traceback's source line after the prefixes launchers put on it: srun's --label rank
# ("0: "), then one rank or host tag ("[rank4]:", "0: [default0]:[rank0]:"'s second half), then the
# traceback's indent. The corroborated asserts below begin with it.
_SOURCE_LINE = r"^(?:\d+: +)?\S*\s*"
_BUS_ERROR = r"\bSIGBUS\b|\bBus error\b"  # the signal a process dies of on a page /dev/shm cannot back
# Any text up to the next exception name on the line: a ".*" after "Error: " that stops where another
# "Error: " starts, so a line of many of them is scanned once (a rule is read within one message)
_IN_ONE_MESSAGE = r"(?:(?!(?:Error|Exception): ).)*"
# Benign alone, a failure with its other half: (label, the line, a line elsewhere in the log that
# makes it one). c10d's IPv6 lookup warning is harmless while the connection then succeeds over
# IPv4; followed by failed connects it is the name that does not resolve (meta-pytorch/monarch#1571).
CORROBORATED_SIGNS: tuple[tuple[str, str, str], ...] = (
    # A checkpoint loader asking the saved state for a key it does not hold, with the loader in the
    # traceback: Megatron's one model chunk per virtual pipeline stage ("KeyError: 'model0'" under
    # load_checkpoint: a checkpoint saved without virtual stages loaded with them, or the other way
    # round), nanotron's optimizer state of another tensor-parallel degree ("KeyError: None" in
    # load_optimizer), big_vision's params saved flat ("KeyError: img" in load_params)
    (
        "checkpoint_mismatch",
        r"\bKeyError: ",
        # (each alternative spelt out: its whole words are the gate, never a bare "checkpoint")
        r"\bin load_checkpoint\b|\bin load_optimizer\b|\bin load_state_dict\b|\bstate_dict\['model%d' % i\]"
        r"|\bin load_params\b"  # big_vision's loader: a saved tree without the model's subtree
        # ... and a resume that hands a loader one entry of the loaded file
        # ("optimizer.load_state_dict(utils_state_dict['optimizer'])": SFA3D's released weights
        # hold no optimizer state, saved in a file of its own)
        r"|\.load_state_dict\([\w.]+\[['\"][\w.]+['\"]\]\)",
    ),
    # A backtrace through NCCL's shared-memory set-up (a debugger's or a crash handler's frame), made
    # a finding by the bus error the process died of: NCCL maps a /dev/shm file larger than the
    # container's /dev/shm holds, and touching the missing pages raises SIGBUS.
    ("shm_too_small", r"\bin ncclShmOpen\(", _BUS_ERROR),
    # ... and the same in a stripped library, where UCX's or a crash handler's backtrace names only
    # NCCL's exported functions ("2 0x000000000007587d ncclGroupEnd()  ???:0") or libnccl.so itself
    (
        "shm_too_small",
        r"^\s*\d+ 0x[0-9a-f]+ nccl\w+\(\)  \?\?\?:\d|/libnccl\.so[.\d]*:\d",
        _BUS_ERROR,
    ),
    # The caching allocator's expandable segments failing to map more memory: a warning, after which
    # it frees its cache and retries. A run that then trains on and finishes printed it too (torchtitan
    # run69: 37 retries, then "Training completed"); made a finding by the process dying after it
    # (a SIGABRT with no OutOfMemoryError line, a CUDA error, the launcher's failed exit code)
    (
        "cuda_oom",
        r"expandable_segments: memory mapping failed with OOM",
        r"Signal \d+ \(SIG[A-Z]+\) received by PID|\bexitcode\s*:\s*-?[1-9]|terminate called after throwing"
        r"|\bCUDA error: |Fatal Python error|Aborted \(core dumped\)",
    ),
    # Horovod's examples (and scripts like them) pinning each process to the GPU at its local rank in
    # the list the framework shows it ("set_visible_devices(gpus[hvd.local_rank()], 'GPU')"): with
    # more processes on the node than GPUs, or CUDA_VISIBLE_DEVICES leaving each process one, the list
    # is too short and that rank dies of an IndexError, which alone could be any bug
    (
        "gpu_assignment_invalid",
        r"\bIndexError: list index out of range\b",
        r"\b(?:gpus|gpu_ids|devices|physical_devices)\[(?:hvd\.|args\.|self\.)?local_rank(?:\(\))?\]",
    ),
    # Ray's raylet warning that its session or spill directory's disk is over 95% full (it goes on:
    # objects spill elsewhere or fit), made a finding by the Ray job then failing
    (
        "disk_full",
        r"\bis over \d+% full, available space: ",
        r"\bJob entrypoint command failed with exit code [1-9]",
    ),
    # JAX/XLA's distributed initialize: a task's registration with the coordination service (the
    # rendezvous of process 0's coordinator) running out of time
    (
        "rendezvous_timeout",
        r"while calling /tensorflow\.CoordinationService/RegisterTask\b",
        r"DEADLINE_EXCEEDED|Deadline Exceeded",
    ),
    # An NFS "stale file handle" while Triton compiles or autotunes (its frames in the traceback):
    # another rank or node rewrote the shared cache directory under it
    ("triton_cache_shared_fs", r"\[Errno 116\] Stale file handle", r"/triton/(?:runtime|compiler)/\w+\.py"),
    # A training loop's assert that the global batch is the per-GPU batch times accumulation times
    # the number of ranks, with a bare AssertionError
    (
        "batch_size_not_divisible",
        _SOURCE_LINE
        + r"assert\s+\(?\w*batch[_ ]?size\w*\s*==\s*.*(?:world_size|num_gpus|n_gpus?|dp_size|data_parallel_size)\b",
        r"\bAssertionError\b",
    ),
    # ... and a model's own width against its attention heads ("assert d_model % n_heads == 0",
    # Text-Classification's Transformer), with a bare AssertionError: the rule torch's
    # MultiheadAttention states in words ("embed_dim must be divisible by num_heads")
    (
        "model_config_invalid",
        _SOURCE_LINE
        + r"assert\s+\(?(?:\w+\.)?(?:d_model|hidden_(?:size|dim)|embed_dim|emb(?:ed)?_size|n_embd|model_dim|dim)"
        r"\s*%\s*\(?(?:\w+\.)?(?:n_heads?|num_heads|nheads?|num_attention_heads|heads)\)?\s*==\s*0\b",
        r"\bAssertionError\b",
    ),
    (
        "master_addr_unresolved",
        r"The IP(?:v6|v4) network addresses of .* cannot be retrieved \(gai error",
        r"client socket has failed to connect|DistNetworkError|(?<!error of type )RendezvousConnectionError",
    ),
    # A traceback's own source line, made a finding by the exception the log then shows: an assert
    # that the batch size (or nanoGPT's gradient_accumulation_steps, the global batch counted in
    # micro-batches) divides by the device count, with a bare AssertionError (no message) ...
    (
        "batch_size_not_divisible",
        _SOURCE_LINE
        + r"assert\s+\(?[\w.\[\]'\"]*(?:batch[_ ]?size|grad(?:ient)?_acc(?:um(?:ulation)?)?_steps)\w*\s*%\s*.+==\s*0",
        r"\bAssertionError\b",
    ),
    # einops failing to split an axis into as many chunks as a sequence- or context-parallel group
    # has ranks (Ulysses-style sequence parallelism shards frames or tokens with rearrange: "Shape
    # mismatch, can't divide axis of length 20 in chunks of 8"), with that group's size named in the
    # log (the rearrange call's own source line: "n=sp_world_size"): the input's length does not
    # divide by the parallel degree. A split of any other axis stays unknown.
    (
        "parallelism_config_invalid",
        r"\bcan't divide axis of length \d+ in chunks of \d+",
        r"\bsp_world_size\b|\bcp_world_size\b|\bulysses_world_size\b|\bsequence_parallel_size\b"
        r"|\bcontext_parallel_size\b|\bulysses_degree\b",
    ),
    # ... a device-side assert raised out of the embedding lookup (its own source line in the
    # traceback): a token id at or above the vocabulary size (the kernel's assert line may be lost)
    (
        "vocab_mismatch",
        r"\breturn (?:torch\.embedding|F\.embedding)\(",
        # ... or, on the CPU, torch 0.4's TH wording of the same lookup past the table's rows
        r"device-side assert triggered|\bindex out of range at \S*/THTensorMath\.c:\d+",
    ),
    # ... Megatron's learning-rate scheduler checking the flags it was built from (--lr, --min-lr,
    # --lr-decay-iters/samples, --lr-warmup-*, --start/end-weight-decay: megatron/core's
    # OptimizerParamScheduler, the older AnnealingLR), so a decay span of zero steps (fewer samples
    # than one global batch) fails as "assert self.lr_decay_steps > 0" ...
    (
        "train_flags_invalid",
        _SOURCE_LINE
        + r"assert\s+self\.(?:(?:lr_)?(?:decay|warmup)_steps|wsd_decay_steps|(?:min|max|init)_lr|(?:start|end)_wd)\b",
        r"\bAssertionError\b",
    ),
    # ... a bare assert on one of the parsed flags (Megatron's validate_args: "assert not args.bf16"
    # when --fp16 is also set), whose AssertionError carries no message; one about parallel sizes or
    # batch sizes is left to those labels' own rules
    (
        "train_flags_invalid",
        _SOURCE_LINE + r"assert\s+\(?(?:not\s+)?args\.(?!\w*(?:parallel|world_size|batch))\w+",
        r"^\S*\s*AssertionError\s*$",
    ),
    # ... a configuration dataclass refusing its values in __post_init__ (that frame in the
    # traceback), with the message naming the option: megatron-core's TransformerConfig and
    # ModelParallelConfig ("ValueError: When using pipeline parallelism, pipeline_dtype must be
    # specified", "distribute_saved_activations: True must be false when sequence parallel is
    # enabled"), HF's TrainingArguments, LLaMA-Factory's and nanotron's arguments. A rule about
    # parallel sizes or the model's shapes keeps its own label (a signature outranks this sign on
    # the same line); the `raise ValueError(` source line above the message is not the message.
    (
        "train_flags_invalid",
        r"\b(?:ValueError|AssertionError)\s*:",
        r"\.py\", line \d+, in __post_init__\s*$",
    ),
    # ... an assert that a path exists, shown as its source line over a bare AssertionError, made a
    # finding by a frame of the traceback that joins a data split's file name ("self.vocab.count_file(
    # os.path.join(path, 'train.txt'))", Transformer-XL's corpus reader): a checkpoint's or config's
    # existence is asserted the same way, and only the frame says which file it was
    (
        "dataset_path_missing",
        _SOURCE_LINE + r"assert\s+os\.path\.(?:exists|isfile|isdir)\(",
        r"os\.path\.join\([^)]*['\"](?:train|valid|val|test|dev)[\w-]*\.(?:txt|jsonl?|csv|tsv|parquet|bin|idx)['\"]\)",
    ),
    # ... and a missing file in a traceback that runs through the run's dataset set-up (a frame of
    # its data-loader module, or of a get/load/build-dataset function): a file the data needs
    # (PanguWeather's climatology "bias/T_4.71_bias.npy" under Trainer.get_dataset), whatever its
    # name says
    (
        "dataset_path_missing",
        r"\bFileNotFoundError: \[Errno 2\] No such file or directory: ",
        r'File "[^"]*/data_?loader\w*\.py", line \d+, in |, in (?:get|load|build|make|create)_\w*datasets?\s*$',
    ),
    # ... and an average over a split that has no samples (dividing by its length)
    (
        "dataset_too_small",
        r"/=?\s*(?:float\()?len\(\s*[\w.\[\]'\"]*(?:val|valid|eval|test|train|data|files|loader|samples)",
        r"\bZeroDivisionError\b",
    ),
    # ... and a trainer that counted zero steps in an epoch (fewer samples than one global batch)
    # and then divides by that count: verl's SFT trainer says so first ("Number of steps/epoch 0,
    # number of epochs 6, total number of steps 0"), and the division's own source line shows it
    (
        "dataset_too_small",
        r"\b[Nn]umber of steps/epoch 0\b",
        r"\bZeroDivisionError\b",
    ),
    (
        "dataset_too_small",
        # (Hugging Face's Trainer: "self.state.epoch = epoch + (step + 1 + steps_skipped) / steps_in_epoch")
        # (gated on "_epoch": a gate "iterations..." would join the one every iteration line holds)
        _SOURCE_LINE
        + r".*(?://?|%)\s*(?:self\.)?(?:(?:steps|iters|iterations|batches)_per|steps_in)_epoch\b",
        r"\bZeroDivisionError\b",
    ),
)

_EFA_ACTIVE = (r"NET/OFI Selected [Pp]rovider is efa", r"Using network (AWS )?Libfabric", r"Using network IB")
# NCCL went on over TCP sockets: a fabric that could not be used (no EFA provider, an HCA that would
# not open) made the run slow, not broken; nccl_socket_fallback names it and its fix covers both.
_SOCKETS_USED = (r"Using network Socket",)
# A cluster whose fabric is InfiniBand/RoCE, not EFA: NCCL's own IB transport lists its HCAs, or the
# bootstrap runs over an IPoIB interface (ib0, ibs8, ibp12s0). There "no libnccl-net.so plugin" is
# NCCL's normal start (NCCL >= 2.19 prints it on every such node), not a missing EFA plugin.
# NCCL failing to open a Mellanox HCA also shows the node has one (not an EFA node).
_IB_FABRIC = (
    r"NET/IB ?: ?Using \[\d+\]",
    r"via NET/IB",
    r"Bootstrap ?: ?Using (?:\[\d+\])?ib\w*:",
    r"NET/IB ?: ?Unable to open device mlx",
)

# A Google Cloud GPU cluster, whose fabric is reached through Google's own NCCL net plugins (gIB on
# A3 Ultra/A4, FasTrak/TCPXO on A3 Mega, GPUDirect-TCPX on A3 High): a plugin missing there is not
# aws-ofi-nccl, and the "No plugin found" lines around it are not an EFA node's.
# (The plugin names alone: "network gIB" would share the gate "network " with every c10d IPv6
# warning, and a look-behind slows the alternation of every unless pattern.)
_GCP_FABRIC = (r"gIB\b", r"FasTrak\b", r"GPUDirectTCPX")
# NCCL told to load HPC-X's RDMA/SHARP plugin (NCCL_NET_PLUGIN set to its path, as images built for
# InfiniBand clusters do) and not finding it: the plugin the run wanted is an InfiniBand one, not
# aws-ofi-nccl, so "install aws-ofi-nccl" is not the fix; sockets between nodes, if NCCL then used
# them, are what nccl_socket_fallback names (and what `workshop monitor nccl` reports, without
# blaming aws-ofi-nccl).
IB_PLUGIN_WANTED: tuple[str, ...] = (r"Could not find:? libnccl-net-\S*nccl_rdma_sharp_plugin",)

# Evidence that NCCL's communicators hold one process each (a single-GPU run, or a notebook): the
# ring of every "Channel NN/MM :" line lists one rank, or every init says "nranks 1". No byte then
# crosses a network, so which transport NCCL picked (sockets, no net plugin) does not matter. Any
# communicator with two or more ranks (SHARED) cancels it: a TP group of one inside a multi-node job
# is not a single-process run.
SOLO_RANK_PATTERNS: tuple[str, ...] = (r"NCCL INFO Channel \d+/\d+ :\s+0\s*$", r"\bnranks 1\b")
SHARED_RANK_PATTERNS: tuple[str, ...] = (
    r"NCCL INFO Channel \d+/\d+ :\s+\d+\s+\d+",
    r"\bnranks (?:[2-9]|\d\d+)\b",
)
# Labels that only matter when traffic leaves the process: dropped on single-process evidence.
NETWORK_ONLY_LABELS: tuple[str, ...] = ("efa_plugin_missing", "nccl_socket_fallback")
# ... and with them, on evidence that every rank is on one node or in one process, aws-ofi-nccl
# finding no EFA provider: nothing goes between nodes, and NCCL's intra-node transports carry it all
# (not a survivable context beside unknown errors, though: with several nodes NCCL had no transport)
LOCAL_ONLY_LABELS: tuple[str, ...] = (*NETWORK_ONLY_LABELS, "efa_provider_unavailable")
# Contexts a run survives (NCCL goes on over its own sockets): they do not outrank error lines that
# no signature explains, which are then the failure, listed with the context beside them. (An EFA
# provider that failed with no socket fallback is another matter: NCCL had no transport left, and
# the errors after it are its consequence.)
SURVIVABLE_CONTEXTS: tuple[str, ...] = NETWORK_ONLY_LABELS
# Evidence that every rank runs on one node, which drops the same labels: intra-node traffic never
# goes through the network plugin. NCCL's communicator summary counts nodes ("comm 0x... rank 0
# nRanks 8 nNodes 1 localRanks 8", NCCL >= 2.19; an MNNVL domain of several hosts is one node to
# NCCL, its traffic on NVLink), and nccl-tests' device table names the host of every rank of the
# test ("#  Rank  0 Group  0 Pid  12877 on host-a device  0"). A count of two or more nodes, or a
# table with two hosts, cancels it (a per-pod log of a multi-node job shows only its own host).
SINGLE_NODE_PATTERN = r"\bnNodes 1\b"
MULTI_NODE_PATTERN = r"\bnNodes (?:[2-9]|\d\d+)\b"
# Older NCCLs print no node count, but every ring and tree hop of their channels says how it goes:
# within a node over P2P or shared memory, between nodes over the network ("via NET/IB/0"). A log
# with such hops and none through the network ran on one node (the hop lines of a multi-node ring
# always include its NET hops); one network hop cancels it.
# (Plain substrings of the "NCCL INFO Channel" lines: thousands of them in a long log.)
INTRA_NODE_HOPS: tuple[str, ...] = (
    " via P2P", " via SHM", " via direct shared memory", " via direct pointer", " via CUMEM",
)  # fmt: skip
INTER_NODE_HOP = " via NET/"
# The lines that carry those hops: "Channel NN/MM :" in NCCL 2.7 and later, "Ring NN :" before
# ("lufee:19773:20233 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via direct shared memory", NCCL 2.4)
HOP_LINE_LITERALS: tuple[str, ...] = ("NCCL INFO Channel ", "NCCL INFO Ring ")
NCCL_TESTS_RANK_PATTERN = r"^#\s+Rank\s+\d+ (?:Group\s+\d+ )?Pid\s+\d+ on\s+(\S+)\s+device\b"
# Open MPI's mpirun gathers the output of every rank of every node, each line tagged with its rank
# ("[1,3]<stdout>:", SageMaker's "[1,mpirank:3,algo-1]<stdout>:"), and NCCL's own prefix names the
# rank's host ("algo-1:33:33 [1] NCCL INFO ..."): several ranks all on one host ran on one node. (A
# per-pod log under torchrun has no such tag, and shows its own host whatever the job's size.)
# (after a container runtime's own prefix too: docker compose's "algo-1-nrgii | [1,mpirank:3,algo-1]")
MPI_TAGGED_HOST_PATTERN = (
    r"(?:^|\s)\[\d+,(?:mpirank:)?(\d+)(?:,[^\]]*)?\]<std(?:out|err)>:\s*([\w.-]+):\d+:\d+ \[\d+\] "
)

FAILURES: tuple[FailureSignature, ...] = (
    # --- network: EFA / NCCL transport ------------------------------------------------------------
    FailureSignature(
        "efa_provider_unavailable",
        (
            r"NET/OFI Couldn'?t find any optimal provider",
            r"NET/OFI OFI fi_getinfo\(\) call failed",
            r"fi_getinfo: provider efa output empty list",
            r"EFA libfabric provider not detected",
            # (not "NET/OFI No eligible providers were found": aws-ofi-nccl prints it when its first
            # protocol, RDMA, finds no provider, then tries SENDRECV, which may well find one:
            # "Selected provider is cxi ... Using transport protocol SENDRECV" on LUMI's Slingshot.
            # When SENDRECV finds none either, the give-up lines below follow.)
            # aws-ofi-nccl's own give-up lines (src/nccl_ofi_net.cpp, nccl_net_ofi_create_plugin):
            # printed when neither the RDMA nor the SENDRECV protocol found a provider, i.e. with no
            # EFA device in the pod; some versions log only these, not the fi_getinfo line above.
            r"NET/OFI Unable to find a protocol that worked",
            r"NET/OFI aws-ofi-nccl initialization failed",
            r"NET/OFI Initializing plugin failed",  # its v6 entry point's own give-up line
            # the plugin requiring GPUDirect RDMA (FI_HMEM) that the provider does not offer
            r"Cannot run workload without GDR support",
            # NCCL's line when a loaded net plugin's init() fails (src/plugin/net.cc); the
            # aws-ofi-nccl plugin registers as "Libfabric" ("AWS Libfabric" in old releases).
            r"Failed to initialize NET plugin (AWS )?Libfabric",
            # The Neuron runtime's wording of the same failure (trn1 logs quoted in public repos).
            r"OFI plugin initNet\(\) failed",
            # aws-ofi-nccl settling for a non-EFA libfabric provider prints no 'failed' at all: TCP through
            # libfabric is as slow as NCCL's own sockets (old plugins also refuse: 'Only EFA provider'),
            r"NET/OFI Selected [Pp]rovider is (?:tcp|sockets|udp|shm)\b",
            r"NET/OFI Only EFA provider is supported",
            # the provider was found but the plugin cannot create its libfabric objects on it (address
            # vector, endpoint, domain, CQ): an EFA device the pod cannot use (aws-ofi-nccl#22, #889);
            # the kernel's side of it is the efa driver failing a command (dmesg "efa_0: Failed to")
            r"WARN(?:(?!WARN).)*NET/OFI (?:Couldn'?t|Unable to|Failed to) (?:open|allocate|create|bind|enable|initiali[sz]e)\b",
            r"NET/OFI Creating new endpoint for domain \S+ failed",
            r"\befa_\d+: Failed to (?:process command|allocate|create|register)",
            # libfabric's EFA provider aborting on its own (memlock limit too low: "(-12) Cannot
            # allocate memory", "(4112) Failure to post internal receive buffers")
            r"Libfabric EFA provider has encountered an internal error",
            r"EFA internal error: \(\d+\)",
        ),
        "aws-ofi-nccl loaded, but libfabric found no usable EFA provider (or the plugin's "
        "initialization failed): the EFA devices are not visible in the container, so NCCL falls "
        "back to TCP sockets or fails.",
        "Request `vpc.amazonaws.com/efa` in the pod resources (one per EFA interface of the instance), "
        "check the EFA device plugin DaemonSet runs on the node, and that `fi_info -p efa -t FI_EP_RDM` "
        "lists devices inside the pod. When the plugin cannot create its objects on the device (RC -12, "
        "'Cannot allocate memory', or `efa_0: Failed to allocate` in dmesg), raise the container's "
        "locked-memory limit (`ulimit -l unlimited`, memlock) and check the driver with `dmesg`.",
        # a degraded set-up, like a missing plugin: a later fault of its own (an OOM) is the cause
        role="context",
        unless=_SOCKETS_USED,
    ),
    FailureSignature(
        "efa_plugin_missing",
        (
            r"NET/Plugin ?: ?Could not find:? libnccl-net",
            r"NET/Plugin ?: ?Plugin load \(libnccl-net[^)]*\) returned",
            r"NET/Plugin ?: ?No plugin found \(libnccl-net",
            r"NET/Plugin ?: ?No plugin found, using internal implementation",
            # NCCL 2.12-2.18 print dlerror's text first ("NET/Plugin : dlerror=libnccl-net.so: cannot
            # open shared object file: No such file or directory No plugin found (libnccl-net.so)...")
            r"NET/Plugin ?: ?dlerror=libnccl-net[^:]*: cannot open shared object file",
            # NCCL told to use the plugin by name (NCCL_NET="AWS Libfabric" / NCCL_NET_PLUGIN=ofi)
            # without finding it, with or without the "NET/Plugin:" prefix of older releases ("Could
            # not find: aws-ofi libnccl-net-aws-ofi.so")
            r"\bCould not find:? [\w-]+ libnccl-net-[\w-]+\.so",
            r"network (?:AWS )?Libfabric not found",
            # NCCL_NET_PLUGIN=ofi: the loader's error for the plugin (a libefa/libibverbs version it
            # needs), then "Could not find: ofi" with no file name (NCCL 2.26+)
            r"NET/Plugin ?: ?libnccl-net-(?:aws-)?ofi\.so: ",
            r"NET/Plugin ?: ?Could not find:? (?:aws-)?ofi\s*$",
        ),
        "NCCL could not load the aws-ofi-nccl network plugin (libnccl-net*.so), so it cannot use EFA.",
        "Install aws-ofi-nccl in the image and put its lib directory (e.g. /opt/aws-ofi-nccl/lib) and "
        "/opt/amazon/efa/lib on LD_LIBRARY_PATH.",
        unless=_EFA_ACTIVE + _IB_FABRIC + _GCP_FABRIC + IB_PLUGIN_WANTED,
        role="context",
    ),
    FailureSignature(
        "nccl_net_unavailable",
        (
            # NCCL 2.19+ (plugin/net.cc) when no network transport it may use initialises: NCCL_NET
            # names one that is not there ("AWS Libfabric" without aws-ofi-nccl, "IB" without
            # InfiniBand), or NCCL_IB_DISABLE=1 took away the only one; torch raises it as
            # ncclInvalidUsage's "Last error:". Real run on an H100 with NCCL 2.28.9
            # (benchmarks/gpu_faults.py); torchtitan's NCCL_IB_DISABLE=1 run on a B200 node. (Not
            # "Failed to " in the gate: NCCL's INFO lines of healthy runs hold it.)
            r"(?<=\bFailed to )initialize any NET plugin\b",
        ),
        "NCCL found no network transport it is allowed to use, and stopped at init: NCCL_NET names "
        'one that is not available here ("AWS Libfabric" without the aws-ofi-nccl plugin, "IB" '
        "without InfiniBand devices), or NCCL_IB_DISABLE / NCCL_NET_PLUGIN removed the only one.",
        "Unset NCCL_NET (NCCL then picks the best network it finds) unless the plugin it names is in "
        "the image; on EFA install aws-ofi-nccl and put its lib folder on LD_LIBRARY_PATH; drop "
        "NCCL_IB_DISABLE=1 or NCCL_NET_PLUGIN=none from the environment. NCCL_DEBUG=WARN names the "
        "network it looked for.",
    ),
    FailureSignature(
        "nccl_socket_fallback",
        (r"NET/Socket ?: ?Using \[", *_SOCKETS_USED, r"via NET/Socket/"),
        "NCCL is moving inter-node traffic over TCP sockets instead of EFA/InfiniBand: training runs, "
        "but many times slower.",
        "Make EFA work: aws-ofi-nccl on LD_LIBRARY_PATH, `vpc.amazonaws.com/efa` requested, "
        "`hostNetwork: true`; then look for `NET/OFI Selected Provider is efa` in the log. On "
        "InfiniBand (AKS, HPC clusters): the pod needs the HCA (/dev/infiniband through the RDMA "
        "device plugin's resource, `ibv_devinfo` shows PORT_ACTIVE) and `ulimit -l` unlimited "
        "(IPC_LOCK); then look for `Using network IB`.",
        severity="warning",
        unless=_EFA_ACTIVE,
        role="context",
    ),
    FailureSignature(
        "ib_transport_error",
        (
            # NCCL's IB transport (net_ib.cc / ib_plugin.c, any NET/IB* flavour) reporting a failed work
            # completion: status 12 is "transport retry counter exceeded" (the peer's HCA stopped
            # answering: a link, cable, switch or GID/RoCE routing fault), 5 a flushed queue pair. Older
            # NCCL says "Got completion with error 12, opcode 0, len 0, vendor err 129"; NCCL 2.28 names
            # the status ("status=IBV_WC_RETRY_EXC_ERR(12)") after its own "ncclIbTest: Got CQE with
            # error (devIndex=0, ..., qp_num=26257)" line.
            r"Got completion (?:from peer \S+ )?with (?:error[ =]|status=)(?:IBV_WC_\w+\()?\d+",
            r"NET/IB\S*: \w+: Got CQE with error \(",
            # ibvwrap: a verbs call failed (queue pair, completion queue, memory registration): the
            # HCA is not usable from the container (memlock limit, wrong GID index). That includes
            # ibv_reg_dmabuf_mr: NCCL (2.13 on) probes DMA-BUF support with an unchecked call that
            # prints nothing, so the warning comes from registering a buffer, which fails the
            # transport (NVIDIA/nccl#778: an IB driver too old for DMA-BUF; NCCL_DMABUF_ENABLE=0).
            # An HCA it cannot open (ibv_open_device, "Unable to open device": no
            # /dev/infiniband/uverbsN for it) it skips and uses the others, or with none left falls
            # back to sockets, which nccl_socket_fallback names: those lines stay error-like (an
            # unknown failure when nothing else explains the log), no cause.
            r"WARN Call to ibv_(?!open_device)\w+ failed",
            r"NET/IB ?: ?Got async event ?: ?(?:port error|device fatal|local catastrophic)",
        ),
        "NCCL's InfiniBand/RoCE transport failed: a verbs call could not set up a queue pair or "
        "completion queue, or a work completion came back with an error (status 12: the peer's adapter "
        "stopped answering). The fabric, not the training code, is at fault.",
        "Check the HCA inside the pod (`ibv_devinfo` shows PORT_ACTIVE; /dev/infiniband is mounted; "
        "`ulimit -l` is unlimited), the link and switch counters on both hosts named in the line, and on "
        "RoCE the GID index (NCCL_IB_GID_INDEX); NCCL_IB_HCA can exclude a bad adapter. Run nccl-tests "
        "between the two hosts before training again.",
        unless=_SOCKETS_USED,
    ),
    FailureSignature(
        "socket_ifname_bad",
        (
            r"Bootstrap ?: ?no socket interface found",
            r"no NCCL_SOCKET_IFNAME interface found",
            r"ncclSocketInit: connecting to address .* is neither AF_INET",
            # old NCCL (include/socket.h) when no usable IP interface exists
            r"Socket creation failed : Address family not supported",
            # gloo looking up the interface it was told to use (transport/tcp/device.cc; its host-name
            # lookup fails as "rp != nullptr. Unable to find address for: HOST": master_addr_unresolved)
            r"ifa != nullptr\. Unable to find address for: \S+",
            # Transformer Engine's userbuffers bootstrap, which reads NVTE_UB_SOCKET_IFNAME (else
            # NCCL_SOCKET_IFNAME) as one exact interface name, not NCCL's prefix list
            r"Invalid network interface: \S+",
        ),
        "NCCL_SOCKET_IFNAME (or GLOO_SOCKET_IFNAME, or Transformer Engine's NVTE_UB_SOCKET_IFNAME) "
        "names an interface that does not exist in the pod (P4d/P5 nodes have no `eth0` for EFA "
        "traffic), so the bootstrap finds no interface.",
        "Remove NCCL_SOCKET_IFNAME from the environment (NCCL picks a valid interface itself), or set "
        "it to an interface `ip -o link` shows inside the pod (gloo and Transformer Engine want one "
        "exact name, not NCCL's prefix such as `eth`).",
    ),
    FailureSignature(
        "nvls_peer_access",
        (
            r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory",
            r"transport/nvls\.cc.*NCCL WARN Cuda failure",
            r"cuMulticast\w+ failed",
            # NVSHMEM's NVLS team (DeepEP, torch's symmetric memory): its status lines name the file,
            # and the driver says why in dmesg (its cached NVLink fabric state out of sync)
            r"team_internal_nvls\.cpp:\d+: non-zero status: \d+",
            r"Mapping multicast groups for \w+ heap failed",
            r"\bNV_ERR_FABRIC_STATE_OUT_OF_SYNC\b",
        ),
        "NVLink SHARP (NVLS) multicast set-up (NCCL's, or NVSHMEM's) failed on this node (Fabric "
        "Manager / driver state), which aborts communicator creation.",
        "Set NCCL_NVLS_ENABLE=0 in the job environment (NCCL then uses plain NVLink rings/trees; "
        "NVSHMEM_DISABLE_NVLS=1 for NVSHMEM), and have the node's Fabric Manager and driver checked.",
    ),
    FailureSignature(
        "shm_too_small",
        (
            r"Error while creating shared memory segment",
            # the same NCCL warning where a console wrapped it after "Error"
            r"^\s*while creating shared memory segment /dev/shm/",
            r"failed to extend /dev/shm/",
            r"Call to posix_fallocate failed",
            r"insufficient shared memory \(shm\)",
            r"[Nn]o space left on device.*?/dev/shm|/dev/shm.*[Nn]o space left on device",
            # torch's shared-memory tensor files are named /torch_<pid>_...: a DataLoader worker's
            # batch that does not fit says so without the word /dev/shm (real run: a 256 KiB /dev/shm,
            # tests/test_fault_injection.py); "unable to write to file" is older torch's wording.
            r"unable to (allocate shared memory\(shm\)|write to file) for file </torch_",
            r"unable to write to file </torch_",
            # a DataLoader's queue creates POSIX semaphores in /dev/shm; when even those do not fit the
            # error is a bare "OSError: [Errno 28] No space left on device" under this frame
            r"= _multiprocessing\.SemLock\(",
            # torch's DataLoader when a worker dies of SIGBUS writing its batch into /dev/shm; the
            # message is often wrapped or quoted, so each of its parts counts on its own line
            r"DataLoader worker \(pid:? ?\d+\) is killed by signal: Bus error",
            r"workers are out of shared memory",
            r"raise your shared memory limit",
            # UCX's shared-memory transport (Open MPI, NCCL's UCX plugin) on a small /dev/shm: its
            # receive FIFO, or the posix backing file it writes out first (older UCX), does not fit
            r"\bmm_iface failed to allocate receive FIFO\b",
            r"Please check that /dev/shm or the directory you specified has more available memory",
            r"\bfailed to allocate \d+ bytes using md posix\b",
            # Ray's object store on a small /dev/shm: it falls back to /tmp (slow, and spills)
            r"[Oo]bject store is using /tmp instead",
        ),
        "/dev/shm in the container is too small (the container default is 64 MiB): NCCL's intra-node "
        "buffers and DataLoader workers need much more.",
        "Mount a memory-backed emptyDir at /dev/shm (`emptyDir: {medium: Memory, sizeLimit: 128Gi}`).",
        # NCCL could not create the segment because /dev/shm refused it, not because it was full
        # (NVIDIA/nccl#328: a /dev/shm without write permission; its size was never the problem)
        unless=(r"Call to shm_open failed : Permission denied",),
    ),
    # --- timeouts ---------------------------------------------------------------------------------
    FailureSignature(
        "nccl_timeout",
        (
            r"Watchdog caught collective operation timeout",
            # ... and the same timeout raised in the waiting rank itself under blocking wait (torch
            # before 2.0: "RuntimeError: [Rank 1] Caught collective operation timeout: WorkNCCL(...)")
            r"\bCaught collective operation timeout: WorkNCCL\(",
            # torch >= 2.2's heartbeat monitor: the watchdog itself is stuck behind a hung NCCL/CUDA
            # call ("ProcessGroupNCCL's watchdog got stuck for 480 seconds", then the fatal dump line)
            r"watchdog got stuck for \d+ seconds",
            r"Heartbeat monitor timed out",
            r"Terminating the process after attempting to dump debug info",
            r"NCCL communicator was aborted",
            # HCCL's (Ascend's collective library) wording: a collective's wait for a record from a
            # remote rank timed out (EI0002), the peer often gone ("Heartbeat Lost Occurred")
            r"\bThe wait execution of the Notify register times out\b",
            # not "Timeout(ms)=60000": every WorkNCCL(...) names its timeout, also one that failed
            # because a peer died ("raised the following async exception: ... remote process exited")
            r"ProcessGroupNCCL.*[Tt]imed? ?out(?!\(ms\))",
            r"NCCL error:? .*timeout",
            # the gloo backend's collective timeout (gloo/transport/tcp/unbound_buffer.cc)
            r"Timed out waiting \d+ms for (?:recv|send) operation to complete",
            # a rank that waited past the timeout for rank 0 to publish the communicator's id (rank 0
            # still busy, e.g. tokenizing a large dataset alone before its first collective). Torch
            # spelled it "retreiving" until 2.0 and has worded the store's timeout three ways: "Socket
            # Timeout", "Timeout waiting for key: default_pg/0/0 after", "wait timeout after 600000ms"
            r"retr(?:ie|ei)ving ncclUniqueId from \[\d+\] via c10d key-value store by key '\d+', but "
            r"store->get\('\d+'\) got (?:error|exception): (?:Socket Timeout|Timeout waiting for key\b|"
            r"wait timeout after \d+ ?ms)",
            # the frame that throws a collective timeout, when the line that says "timeout" is cut off.
            # Not the watchdog's other frames (Watchdog::run, ncclCommWatchdog, watchdogHandler): it
            # throws every asynchronous CUDA/NCCL error through them too (an illegal memory access is
            # not a timeout), so a bare watchdog abort stays unrecognised (radixark/miles#3273).
            r"WorkNCCL::checkTimeout\(",
            # rank 0's view when another rank timed out first (torch >= 2.4 flight recorder)
            r"Received a dump signal due to a collective timeout",
            # a c10d store wait (a barrier over the TCPStore) reaching the process-group timeout:
            # the other ranks are still busy (axolotl#2684: rank 0 tokenizing for 30 minutes)
            r"\[c10d\] waitForInput: socket .* timed out after \d+ ?ms",
        ),
        "A collective (all-reduce, all-gather...) did not finish within the process-group timeout: "
        "some rank is stuck or dead (a hang in another rank, a network fault, or a rank much slower "
        "than the rest).",
        "Find the first failing rank in all pods' logs (`workshop logs`); check EFA health and "
        "security groups; raise NCCL_TIMEOUT / TORCH_DISTRIBUTED_TIMEOUT (e.g. 1800) only if "
        "checkpoint saves or evaluation legitimately take long.",
        role="symptom",
    ),
    FailureSignature(
        "nccl_peer_connection_closed",
        (
            r"NCCL WARN socketProgress: Connection closed by remote peer",
            r"NCCL WARN (?:(?!NCCL WARN ).)*Connection reset by peer",
            r"NCCL WARN Net : Connection closed by remote peer",
            # torch's and NCCL's summary when a peer dies (NCCLUtils.hpp, ncclRemoteError)
            r"remote process exited or there was a network error",
            r"ncclRemoteError",
            r"socketProgress\w*: Call to recv from \S+ failed : (?:Connection reset by peer|Broken pipe)",
            r"NCCL WARN Net : Call to recv from \S+ failed : (?:Connection reset by peer|Broken pipe)",
            # aws-ofi-nccl on EFA: the peer's queue pair is gone, because its process died
            # (awsome-distributed-ai#312: killed by the pod's memory limit)
            r"NET/OFI .*Invalid receiver queue pair number",
            # gloo (CPU collectives, elastic agents' barriers) when the peer's process is gone
            r"gloo/transport/tcp/\w+\.cc:\d+\] Connection (?:closed|reset) by peer\b",
            # JAX's coordination service after a task died, in the wordings of XLA's distributed client
            # over the years: a task that stopped sending heartbeats, the coordinator itself gone quiet,
            # and the later "fatal errors" form
            r"Terminating process because (?:the JAX distributed service detected fatal errors|the coordinator "
            r"detected missing heartbeats|of missing heartbeat response from the coordinator)\. This most "
            r"likely indicates that (?:another|the coordinator) task died",
        ),
        "Another rank's process went away in the middle of a collective: this line is a consequence; the "
        "cause is the first error of the rank that died (OOM, Xid, a crash, a pod evicted).",
        "Look for the earliest error across all pods' logs (`workshop logs` keeps every rank) and diagnose "
        "that one; `kubectl describe pod` shows OOMKilled or evictions.",
        role="symptom",
    ),
    FailureSignature(
        "rendezvous_timeout",
        (
            r"DistStoreError: Timed out after \d+ seconds waiting for",
            # not the raise itself, nor the agent's keep-alive thread warning that the store went away
            # ("failed to send a keep-alive heartbeat ... due to an error of type RendezvousTimeoutError"),
            # which the agents print at shutdown when the master's agent has already exited
            r"(?<!raise )(?<!error of type )RendezvousTimeoutError",
            r"(?<!raise )(?<!error of type )RendezvousConnectionError",
            r"Timed out initializing process group in store based barrier",
            r"DistStoreError: Socket Timeout",
            r"The client socket has timed out after",
            r"The client socket has failed to connect to any network address",
            # torch < 2 (c10d_rendezvous_backend._create_tcp_store)
            r"connect\(\) timed out\. Original timeout was \d+ ms",
            # Horovod's Gloo rendezvous (its HTTP key-value store on the launcher host): a worker
            # waited for keys the others never wrote ("horovod/common/gloo/http_store.cc:53] Wait
            # timeout for key(s): 0", later "Wait timeout after 30 seconds for key(s): 0"), and its
            # driver waiting for the workers to register ("Timed out waiting for tasks to start. Please
            # check connectivity between servers. You may need to increase the --start-timeout ...")
            r"gloo/http_store\.cc:\d+\]\s+Wait timeout (?:after \d+ seconds )?for key\(s\)",
            r"\bTimed out waiting for [\w ]{1,40}\. Please check connectivity between servers\b",
            # JAX's coordination service: not every process registered before its barrier timed out
            r"DEADLINE_EXCEEDED: Barrier timed out\. (?:Barrier_id|Id): (?:PjRT_Client_Connect|\[Init\]Wait_for_all_tasks_to_register)",
        ),
        "Not all pods joined the torchrun rendezvous in time: a worker pod is not running yet "
        "(pending, pulling its image) or cannot reach the master's port.",
        "Check every pod of the PyTorchJob is Running (`kubectl get pods`), that MASTER_ADDR/PORT "
        "point at the master service, `hostNetwork: true` where EFA is used, and that security "
        "groups allow all traffic between the nodes.",
        role="symptom",
    ),
    FailureSignature(
        "master_port_in_use",
        (
            # c10d's TCPStore server (torchrun's agent on the master node); real run: a port already
            # listened on by another process (tests/test_fault_injection.py)
            r"server socket has failed to listen on any local network address.*EADDRINUSE",
            # ... whose message is often wrapped before its fields ("port: 29500, useIpv6: false,
            # code: -98, name: EADDRINUSE"): only c10d's socket error prints errno 98 in this form
            r"\bcode: -98, name: EADDRINUSE\b",
            # older torch names errno 98 per address ("failed to bind to [::]:29500 (errno: 98 -
            # Address already in use)"), often wrapped across lines; Python's own OSError wording
            r"failed to bind to \S+ \(errno: 98\b",
            r"\(errno: 98 - Address",
            r"\[Errno 98\] Address already in use",
            # torch 1.x: TCPStore's constructor throws errno 98 with no address or number around it
            # (Megatron-LM's _initialize_distributed -> init_process_group -> TCPStore)
            r"(?:RuntimeError|DistNetworkError): Address already in use",
            # accelerate checking the port before it launches ("Tried to launch distributed
            # communication on port `29500`, but another process is utilizing it")
            r"Tried to launch distributed communication on port \S+, but another process is utilizing it",
            # ps-lite's ZeroMQ van (BytePS, MXNet's parameter server) binding the scheduler's
            # rendezvous port, DMLC_PS_ROOT_PORT: the same role as the master port
            r"\bReached max retry for bind: Address already in use\b",
            # gRPC's server (TensorFlow's tf.train.Server of a ps/worker cluster) failing to bind its
            # cluster port: its error JSON ("os_error":"Address already in use","syscall":"bind")
            r'"os_error":"Address already in use","syscall":"bind"',
        ),
        "The master port (--master-port / MASTER_PORT) is already taken on the master node: another "
        "run (an earlier `workshop train` still running, a second job on the same node) listens on it.",
        "Stop the other run (`ss -ltnp | grep PORT` names it), or pick another --master-port; "
        "`workshop train` without --master-port chooses a free one.",
    ),
    FailureSignature(
        "master_addr_unresolved",
        (
            # not Slurm's own lookups of its daemons on their ports 68xx (slurmstepd's "_xgetaddrinfo:
            # getaddrinfo(ctl:6817) failed: Temporary failure in name resolution"): the job's master is
            # never among them. (No leading ".*": a match must start at the words, for unwrapping.)
            # Nor a library's optional lookup that says it goes on without the file (peft's "Unable to
            # fetch remote file due to the following error [Errno -3] Temporary failure in name
            # resolution - silently ignoring the lookup for the file config.json", offline).
            r"(?<!:68\d\d\) failed: )(?:Name or service not known|Temporary failure in name resolution)"
            r"(?!.*\bsilently ignoring the lookup\b)",
            r"gai error: -?\d+",
            r"host not found",
            # gloo's wording (transport/tcp/device.cc)
            r"Unable to find address for: \S+",
            # a Slurm hostlist expression ("nodeai[01,05]", $SLURM_JOB_NODELIST) given as MASTER_ADDR
            r"The IPv6 network addresses of \(\S*\[[\d,-]+\]\S*, \d+\) cannot be retrieved",
        ),
        "The master address (MASTER_ADDR / the rendezvous endpoint) is a host name that does not "
        "resolve from this pod.",
        "Use the PyTorchJob's master service name (`<job>-master-0`) in the same namespace, or the "
        "master pod's IP; with hostNetwork set `dnsPolicy: ClusterFirstWithHostNet` so cluster DNS "
        "still resolves.",
    ),
    # --- memory -----------------------------------------------------------------------------------
    FailureSignature(
        "cuda_oom",
        (
            r"CUDA out of memory",
            # torch.OutOfMemoryError / torch.cuda.OutOfMemoryError; Ray's own exceptions of that name
            # (ray.exceptions.OutOfMemoryError, older Ray's RayOutOfMemoryError) are its memory monitor
            # killing a task for *host* memory (host_oom_killed)
            # (not Triton's "OutOfMemoryError: out of resource: <kernel> Required: N Hardware limit: M",
            # a kernel config asking for more shared memory than an SM has: no GPU memory ran out)
            # (nor Ultralytics' TaskAlignedAssigner catching it and redoing the assignment on the CPU:
            # "WARNING: CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU", and the epoch goes on)
            r"(?<!ray\.exceptions\.)(?<!Ray)OutOfMemoryError(?!: out of resource: | in \w+, using CPU)",
            r"CUDA (?:driver )?[Ee]rror: out of memory",  # the driver API's, from a kernel launcher too
            r"CUBLAS_STATUS_ALLOC_FAILED",
            # NCCL's own device allocation failing (cudaMallocAsync of its buffers): the GPU is full,
            # often of another job's memory
            r"\bFailed to CUDA calloc(?: async)? \d+ bytes",
            # the other CUDA libraries' allocation statuses (DALI's nvJPEG decoder out of device memory:
            # "NVJPEG error "5" : NVJPEG_STATUS_ALLOCATOR_FAILURE"; cuDNN, cuFFT, cuSOLVER, cuSPARSE)
            r"\b(?:NVJPEG_STATUS_ALLOCATOR_FAILURE|CUDNN_STATUS_ALLOC_FAILED|CUFFT_ALLOC_FAILED"
            r"|CUSOLVER_STATUS_ALLOC_FAILED|CUSPARSE_STATUS_ALLOC_FAILED)\b",
            r"cudaErrorMemoryAllocation",
            # the bare number, as MPI codes and C extensions print it: 2 is out of memory in both the
            # runtime (cudaErrorMemoryAllocation) and the driver API (CUDA_ERROR_OUT_OF_MEMORY)
            r"\bCUDA error:? 2\b(?![.\d])",
            # NCCL's own allocations, with or without the CUDA error number ("Cuda failure 2 'out of
            # memory'"), and the driver API's name for it
            r"Cuda failure (?:\d+ )?'out of memory'",
            r"CUDA_ERROR_OUT_OF_MEMORY",
            # Caffe2's check of a CUDA call ("[enforce fail at event_gpu.cc:17] error == cudaSuccess. 2
            # vs 0. Error at: .../event_gpu.cc:17: out of memory")
            r"\[enforce fail at [^\]]+\].*: out of memory\s*$",
            # the same on other accelerators: AMD's HIP, Intel Gaudi's device-memory module, and the
            # AWS Neuron runtime failing to reserve device memory for a model's tensors
            r"\bHIP out of memory\b|\bhipErrorOutOfMemory\b",
            r"\bHIP error:\sout of memory\b",  # torch for ROCm's "CUDA error: out of memory"
            r"\bMODULE:PT_DEVMEM Allocation failed\b",
            # Graphcore's Poplar compiling a graph whose variables do not fit in the IPU's tile memory
            # ("terminate called after throwing an instance of 'poplar::graph_memory_allocation_error'",
            # "what():  Out of memory: Cannot fit all variable data onto one or more tiles.")
            r"\bpoplar::graph_memory_allocation_error\b",
            r"\bOut of memory: Cannot fit all variable data onto one or more tiles\b",
            r"\bMODULE:(?:PT_)?SYNHELPER workspace Allocation of size ::\d+ failed",  # Gaudi's graph workspace
            r"\bTDRV:\w+\s+Failed to reserve one tmpbuf memory\b",
            r"\bTDRV:\w+\s+Failed to alloc(?:ate)? (?:DEVICE memory\b|[\d.]+[KMG]B \(usage: \w+\) on ND )",
            # XLA (JAX, TensorFlow) on the device: its allocator's own words for the same thing, with the
            # status code as TensorFlow 1.x spells it too ("(0) Resource exhausted: Out of memory while
            # trying to allocate 22927360 bytes." under an xla_compile node)
            r"(?:RESOURCE_EXHAUSTED|Resource exhausted): Out of memory while trying to allocate \d+ bytes",
            # ... and on a TPU (torch_xla's XRT: "Attempting to reserve 10.51G at the bottom of memory.
            # That was not possible."; newer XLA: "Ran out of memory in memory space hbm")
            r"Attempting to reserve \S+ at the bottom of memory\. That was not possible\.",
            r"\bRan out of memory in memory space hbm\b",
            # ... and XLA:TPU's runtime allocator failing a buffer at run time (OpenXLA's error E0100,
            # RuntimeBufferAllocationFailure: "Attempting to allocate 8.00M. That was not possible.
            # There are 6.43M free.; (0x0x1_HBM0)")
            r"\bError allocating device buffer: Attempting to allocate \S+\. That was not possible\.",
            r"\bE0100: RuntimeBufferAllocationFailure\b",  # newer XLA leads with the code (then wraps)
            # ... and XLA:GPU's executable failing to get its temp buffer ("Execution of replica 0
            # failed: RESOURCE_EXHAUSTED: Failed to allocate request for 108.03GiB (116000729080B) on
            # device ordinal 5"), with the buffer-assignment report XLA prints only for an OOM
            r"RESOURCE_EXHAUSTED: Failed to allocate request for \S+ \(\d+B\) on device ordinal \d+",
            r"^BufferAssignment OOM Debugging\.",
            # Apple's GPU under torch (MPS): "RuntimeError: MPS backend out of memory (MPS allocated:
            # 8.45 GiB, other allocations: 10.73 MiB, max allowed: 9.07 GiB)"
            r"\bMPS backend out of memory\b",
            # PaddlePaddle's allocator (its ResourceExhaustedError summary), on GPUs and its other devices
            r"\bOut of memory error on (?:GPU|XPU|NPU|MLU) \d+\. Cannot allocate\b",
            # torch's caching allocator on Ascend (torch_npu) and Intel GPUs (XPU), worded as for CUDA
            # ("NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; ...)",
            # "XPU out of memory. Tried to allocate 192.00 MiB. GPU 3 has a total capacity of ...")
            r"\b(?:NPU|XPU) out of memory\. Tried to allocate\b",
            # ... and PaddlePaddle 1.x's, an enforce of its GPU allocator ("paddle.fluid.core.EnforceNotMet:
            # enforce allocating <= available failed, 10238983668 > 9509207808")
            r"\benforce allocating <= available failed, \d+ > \d+",
            # ... and Paddle 2.x's report of a CUDA call that failed ("OSError: (External) CUDA error(2),
            # out of memory."), 2 being cudaErrorMemoryAllocation
            r"\bCUDA error\(2\), out of memory\b",
            # MindSpore's device memory pool (GPU or Ascend: "Device(id:0) memory isn't enough and alloc
            # failed, kernel name: ..., alloc size: 1073741824B."; its CPU twin begins "Memory isn't")
            r"\bDevice(?:\(id:\d+\))? memory isn't enough and alloc failed\b",
            # MXNet's pooled storage manager (after freeing its pool and trying once more: "cudaMalloc
            # retry failed"); TensorFlow's allocator for a GPU (its "by allocator cpu" twin is host memory)
            r"\bcudaMalloc(?:Async)?(?: retry)? failed: out of memory\b",
            r"\bOOM when allocating tensor\b.*(?:device:GPU:\d+|by allocator GPU_\d+_bfc)",
            # TensorFlow's copy of a host tensor to the GPU when the GPU allocator gave it no memory
            # for the destination (an InternalError, so no "OOM" word at all)
            r"\bDst tensor is not initialized\b",
            # HAMi's vGPU interceptor (GPU sharing on Kubernetes) refusing an allocation past the pod's
            # nvidia.com/gpumem quota ("Device 0 OOM 3171158016 / 3145728000"): the memory that ran
            # out is the pod's share, however much the card still has free
            r"\[HAMI-core ERROR[^\]]*\]: Device \d+ OOM \d+ / \d+",
            # icefall's (k2's) check of its largest batches before training ("Your GPU ran out of memory
            # with the current max_duration setting. We recommend decreasing max_duration ...")
            r"\bYour GPU ran out of memory with the current \w+ setting\b",
            # TensorFlow's and XLA's BFC allocator failing an allocation (it then dumps its "Current
            # allocation summary"); not its retry warning, which says "with freed_by_count=0. The caller
            # indicates that this is not a failure"
            r"\bAllocator \(GPU_\d+_bfc\) ran out of memory trying to allocate \S+ \(rounded to \d+\)",
            # CuPy's memory pool (Chainer, CuPy code): "out of memory to allocate 205520896 bytes (total
            # 16068929536 bytes)", in Chainer's "Exception in main training loop: ..." too
            r"\bout of memory to allocate \d+ bytes \(total \d+ bytes\)",
            # transformers' bitsandbytes quantizers refusing a device_map that put modules on the CPU
            # or disk because the GPU had no room for them ("Some modules are dispatched on the CPU or
            # the disk. Make sure you have enough GPU RAM to fit the quantized model."): the model does
            # not fit the GPU's free memory
            r"\bSome modules are dispatched on the CPU or the disk\. Make sure you have enough GPU RAM\b",
            # torch 0.x's THC check of a CUDA call (error 2 is cudaErrorMemoryAllocation), and fairseq's
            # trainer catching the OOM and dropping the batch, in its 2018 wording ("ran out of memory
            # on GPU #2, skipping batch") and its later ones: the run goes on, a batch lighter each time
            r"\bTHCudaCheck FAIL file=\S+ line=\d+ error=2 : out of memory",
            # ... and torch 0.4-1.x raising it ("RuntimeError: cuda runtime error (2) : out of memory
            # at .../THCCachingAllocator.cpp:510"), beside gpu_assignment_invalid's "(10)" twin
            r"\bcuda runtime error \(2\) : out of memory\b",
            # ... and the error-check idiom of CUDA code samples that C++ trainers copy (Marian's 2017
            # gpuAssert: "GPUassert: out of memory marian-dev/src/tensors/device_gpu.cu 32"), with
            # cudaGetErrorString's words for error 2
            r"\bGPUassert: out of memory\b",
            # ... and the driver API's check in torch_memory_saver (slime's and verl's offloading of
            # weights and KV cache between training and rollout): "[torch_memory_saver.cpp] CUresult
            # error: 2 (out of memory) file=csrc/utils.h func=cu_mem_create", 2 being
            # CUDA_ERROR_OUT_OF_MEMORY in cuGetErrorString's words
            r"\bCUresult error:\s2 \(out of memory\)",  # (\s: its gate is then "out of memory", not "error: ")
            # ... and Caffe's glog CHECK of the allocation ("Check failed: error == cudaSuccess (2 vs. 0)
            # out of memory"), as gpu_assignment_invalid reads its "(10 vs. 0)"
            r"(?<=\(2 vs\. 0\)  )out of memory",
            r"\bran out of memory on GPU #\d+, skipping batch\b",
            r"\battempting to recover from OOM in forward/backward pass\b",
            r"\bOOM in all workers, skipping update\b",
            # DGL's check of a CUDA call with cudaGetErrorString's words after "CUDA: " ("Check failed:
            # e == cudaSuccess || e == cudaErrorCudartUnloading: CUDA: out of memory")
            r"\bCUDA: out of memory\b",
            # nnabla's caching allocator: a failed allocation frees its cache and retries once
            # ("Failed to allocate. Freeing memory cache and retrying."), then gives up
            r"\bFailed to allocate again\.",
        ),
        "A GPU ran out of memory: weights, gradients, optimizer state and activations of the busiest "
        "GPU (first pipeline stage) do not fit.",
        "Lower --micro-batch-size, raise --tensor-model-parallel-size (within a node) or "
        "--pipeline-model-parallel-size, add --use-distributed-optimizer and --recompute-granularity "
        "selective/full; check the plan with `workshop plan`.",
    ),
    FailureSignature(
        "host_oom_killed",
        (
            r"\bOOMKilled\b",
            r"exitcode\s*:\s*-9\b",
            r"[Ss]ignal 9 \(SIGKILL\) received by PID",
            r"terminated with signal SIGKILL",  # torch.multiprocessing.spawn
            # Slurm's cgroup OOM killer (slurmstepd/srun), and a container killed with SIGKILL (128 + 9)
            r"Detected \d+ oom[-_]kill event",
            r"task \d+: Out Of Memory",
            # ... Slurm's older memory enforcement (jobacct polling, not the cgroup), and the other
            # batch systems' own words: PBS killing a job over its mem/vmem request, LSF's exit reason
            r"\bexceeded memory limit \(\d+ > \d+\), being killed\b",
            # (two patterns, not "(?:job|step)": each keeps its whole phrase as its gate, where the
            # alternation would leave " memory limit", a phrase of healthy lines too)
            r"\bExceeded job memory limit\b",
            r"\bExceeded step memory limit\b",
            r"\bPBS: job killed: v?mem\b.*\bexceeded limit\b",
            r"\bTERM_MEMLIMIT: job killed after reaching LSF memory usage limit\b",
            r"\bExit Code:\s+137\b",
            # the same exit status in launchers' and shells' own words ("exited with code 137", "exit
            # status 137", "returned non-zero exit status 137")
            r"\b[Ee]xit(?:ed)?(?: with)?(?: non-zero)? (?:code|status)[:=]? ?\(?137\b",
            # the kernel's OOM killer itself (dmesg / journalctl -k on the node)
            r"[Oo]ut of memory: Kill(?:ed)? process \d+",
            r"\boom-kill:constraint=",
            # its first line ("python invoked oom-killer: gfp_mask=..."), which names the process that
            # asked for memory when none was left; the "Killed process" line may be cut from an excerpt
            r"\binvoked oom-killer\b",
            # runc: the container's first process was killed by its cgroup's memory limit
            r"container init was OOM-killed",
            # Ray's memory monitor: it kills the newest task itself before the kernel would
            # (ray.exceptions.OutOfMemoryError "Task was killed due to the node running low on
            # memory", the raylet's "killed due to memory pressure (OOM)")
            r"[Kk]illed due to the node running low on memory",
            r"killed due to memory pressure \(OOM\)",
            r"which exceeds the memory usage threshold of \d",
            # the kubelet evicting pods when the node runs out of memory (its ephemeral-storage twin is
            # disk_full), and DeepSpeed's launcher reporting a rank SIGKILLed
            r"The node was low on resource: memory\b",
            r"The node had condition: \[MemoryPressure\]",
            r"exits with return code = -9\b",
            # ... and the same -9 passed on by a Python wrapper between the launcher and the rank
            # (sys.exit(-9) leaves 247, 256 - 9: Determined's pid_client under DeepSpeed's launcher,
            # "... exits with return code = 247", then pdsh's "ssh exited with exit code 247" and
            # the cluster's "container failed with non-zero exit code: 247")
            r"\b(?:exits with return code = |ssh exited with exit code |container failed with non-zero exit code: )247\b",
            # GNU time (/usr/bin/time) reporting the command it ran SIGKILLed
            r"Command terminated by signal 9\b",
            # Python's subprocess reporting the child it ran SIGKILLed (accelerate launch, a
            # wrapper script): "Command '[...]' died with <Signals.SIGKILL: 9>."
            r"died with <Signals\.SIGKILL: 9>",
            # Dask's nanny reporting its worker SIGKILLed (XGBoost or RAPIDS on Dask: "Worker process
            # 9018 was killed by signal 9"), and older Ray's memory monitor ("RayOutOfMemoryError: More
            # than 95% of the memory on node ip-172-31-7-2 is used (7.12 / 7.49 GB)")
            r"\bWorker process \d+ was killed by signal 9\b",
            # ... and its memory manager terminating a worker past its budget itself ("Worker exceeded
            # 95% memory budget.  Restarting" in 2018, "Worker tcp://10.0.0.5:40123 (pid=812) exceeded
            # 95% memory budget. Restarting..." since 2022, in distributed's worker_memory.py)
            r"\bWorker (?:\S+ \(pid=\d+\) )?exceeded \d+% memory budget\.\s+Restarting",
            r"\bRayOutOfMemoryError: More than \d+% of the memory on node\b",
            # Open MPI's mpirun reporting a rank SIGKILLed ("mpirun noticed that process rank 1 with PID
            # 39 on node worker-1 exited on signal 9 (Killed)"): in a pod, its memory limit
            r"\bexited on signal 9 \(Killed\)",
            # a DataLoader worker killed outright (SIGKILL): the kernel's OOM killer, as the workers
            # copy the dataset's Python objects page by page (a Bus error instead is /dev/shm)
            r"DataLoader worker \(pid:? ?\d+\) is killed by signal: Killed",
            # an allocation the host refused: PyTorch's CPU allocator, or any call failing with ENOMEM
            # (os.fork() of a checkpoint writer, a pinned buffer)
            r"DefaultCPUAllocator: can't allocate memory",
            r"\[Errno 12\] Cannot allocate memory|Error code 12 \(Cannot allocate memory\)",
            # bash reporting a command of its script killed by SIGKILL ("job.sh: line 18: 16348 Killed
            # python3 consolidate.py ...")
            r"\bline \d+: +\d+ Killed +\S",
            # Ray's advice printed with every task its memory monitor killed (the error's other lines
            # may be cut by Ray's 20,000-character log window)
            r"how to address the out of memory issue: \S*ray-oom-prevention",
            # Python's own MemoryError is host memory (the GPU's is torch's OutOfMemoryError, cuda_oom):
            # an allocation refused before the kernel's OOM killer stepped in. Not "MemoryError: " with
            # nothing after it on the line: Python prints a bare "MemoryError" for an empty message, so
            # that is a message that begins with a line break, as PaddlePaddle raises its C++ errors,
            # whose GPU out-of-memory (a ResourceExhaustedError summary a few lines down) is a
            # MemoryError in Python; with its module too (NumPy 1.x's "numpy.core._exceptions.MemoryError:
            # Unable to allocate 502. MiB for an array with shape ...")
            r"(?:^|[\s:\].])MemoryError(?::(?!\s*$)|\s*$)",
            # ... and NumPy's subclass of it (numpy.core._exceptions._ArrayMemoryError; numpy._core in 2.x)
            r"\b_ArrayMemoryError: Unable to allocate\b",
            # MindSpore's CPU device context refusing an allocation (its GPU twin: "Device(id:0) memory")
            r"\bMemory isn't enough and alloc failed\b",
            # the shell's report of its foreground command killed by SIGKILL ("Killed", in a Chinese
            # locale "已杀死"), alone on its line or after a progress bar's last redraw: the kernel's
            # OOM killer, as a checkpoint converter loading a model into RAM meets it
            # (not srun's report of tasks it killed itself once another task of the step exited: "srun:
            # error: g3060: tasks 1-3: Killed" after "Terminating StepId")
            r"(?:^|(?<!:)[\s\]|])(?:Killed|已杀死)\s*$",
        ),
        "The host ran out of memory: the kernel killed a training process (SIGKILL / OOMKilled), or "
        "an allocation failed (Python's MemoryError): the pod hit its memory limit, typically while "
        "loading a checkpoint, building a dataset index, or with too many DataLoader workers.",
        "Raise the pod's memory request/limit, lower --num-workers, and check `kubectl describe pod` "
        "for `OOMKilled`.",
        # torchrun's own escalation: a rank that hung (or was stopped) after another rank failed does
        # not end on SIGTERM and is SIGKILLed 30 s later, then reported with exitcode -9 like an OOM
        # kill (tests/test_fault_injection.py, a stopped rank). Caveat: this drops the label for the
        # whole log; a real OOM kill followed by such an escalation of other ranks needs the pids paired.
        unless=(r"Unable to shutdown process \d+ via \d+, forcefully exiting via 9",),
    ),
    # --- configuration ----------------------------------------------------------------------------
    FailureSignature(
        "batch_size_not_divisible",
        (
            r"global batch size \(\d+\) is not divisible by micro batch size \(\d+\) times data parallel size",
            r"global batch size not divisible",
            # the kit's trainer (workshop_lib/train/arguments.py finalize_parallel)
            r"--global-batch-size \d+ is not divisible by --micro-batch-size \d+ x data-parallel size",
            # DeepSpeed's config check (deepspeed/runtime/config.py _batch_assertion), all versions;
            # a wrapped rich traceback keeps only the first words on the line,
            r"train_batch_size is not equal to micro_batch_per_gpu \* gradient_acc_step \* world_size",
            r"Check batch related parameters",
            r"(?:Micro batch size per gpu|Train batch size|Gradient accumulation steps): -?\d+ has to be greater than 0",
            # Megatron-LM/megatron-core spellings with underscores or "must be"
            r"global[ _]batch[ _]size \(?\d*\)? ?(?:is not|must be|should be) divisible by micro[ _]batch[ _]size",
            # TRL's GRPO: the batch over the data-parallel ranks and the generations per prompt
            r"[Bb]atch size \([^)]*\) must be evenly divisible\b",
            # ... and a trainer's own check of its batch against the ranks sharing it ("ValueError:
            # batch size(8) must be divisible by world_size(3)!", AReaL's create_dataloader)
            r"\b[Bb]atch[ _]size ?\(?\d+\)? (?:must|should) be (?:evenly )?divisible by (?:the )?world[ _]size\b",
            # verl splitting a batch over its workers (DataProto.chunk): the rollout or train batch
            # does not divide by the number of workers or data-parallel ranks
            r"only support equal chunk\. Got size of DataProto \d+ and chunk \d+",
            # ... and verl's workers dividing the PPO mini-batch (times the rollouts per prompt) by
            # their data-parallel ranks down to zero: the same global-over-GPUs division as
            # DeepSpeed's "Micro batch size per gpu: 0 has to be greater than 0"
            r"\b\w*(?:mini|micro)_batch_size\w* -?\d+ should be larger than 0 after normalization",
            # a C++ framework's glog CHECK of the batch against the devices (OneFlow's OFRecord
            # reader: "Check failed: (batch_size % parallel_num) == (0) (4 vs 0)")
            r"\bCheck failed: \(\w*batch_size\w* % \w+\) == \(0\)",
        ),
        "Megatron needs global batch = micro batch x data-parallel size x number of micro-batches; "
        "the global batch size does not divide.",
        "Choose --global-batch-size as a multiple of micro-batch-size x DP, where DP = GPUs / (TP x PP "
        "x CP); `workshop plan` prints valid combinations.",
    ),
    FailureSignature(
        "deepspeed_config_invalid",
        (
            # DeepSpeed refusing its ds_config at deepspeed.initialize(): ZeRO's own checks
            # (deepspeed/runtime/zero/utils.py), the config error class, and pydantic's report on a
            # field of the wrong type ("1 validation error for DeepSpeedZeroConfig" / ...ConfigModel);
            # transformers' and accelerate's integrations word the offload rules themselves.
            # (not its refusal of a checkpoint saved at another DP size: checkpoint_mismatch)
            r"ZeRORuntimeException: (?!The checkpoint being loaded)\S",
            r"DeepSpeedConfigError: ",
            r"(?<!\d)\d+ validation errors? for DeepSpeed\w*Config",
            r"ZeRO[ -]Offload can only work with DeepSpeed optimizers",
            # a ZeRO stage refusing an option it cannot combine with ("NotImplementedError: ZeRO-3 does
            # not yet support checkpointing with NVMe offloading, please disable for now.")
            r"\bZeRO-?[123] does not (?:yet )?support\b",
            r"Invalid (?:optimizer|parameter|param) offloading device specified",
            # transformers' Trainer checking the ds_config against its own arguments
            r"Please correct the following DeepSpeed config values that mismatch TrainingArguments",
            # DeepSpeed refusing two features together ("the compatibility between 'autotp' and
            # 'zero_stage = 3' has not been validated")
            r"compatibility between '[^']+' and '[^']+' has not been validated",
            # ZeRO with an optimizer it was not tested with needs "zero_allow_untested_optimizer"
            r"You are using an untested ZeRO Optimizer",
            # accelerate given both its own DeepSpeed fields and a ds_config file that sets them
            r"When using `deepspeed_config_file`, the following accelerate config variables will be ignored",
            # accelerate unable to fill the ds_config's "auto" micro batch size: prepare() got no
            # dataloader to take it from (a model prepared alone), so the config must give a number
            r"When using DeepSpeed,? `?accelerate\.prepare\(\)`? requires you to pass at least one of training or evaluation dataloaders",
            # transformers' from_pretrained refusing ZeRO-3 (which partitions the weights as they are
            # created) together with its own low-memory loading or a device_map
            r"DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`",
            # DeepSpeed's pipeline engine refusing a ZeRO stage that partitions gradients
            r"\bZeRO-\d(?: and ZeRO-\d)? (?:is|are) incompatible with pipeline parallelism\b",
            # transformers' evaluation-only DeepSpeed set-up (deepspeed_init(inference=True)) given a
            # ZeRO-1/2 config: "ZeRO inference only makes sense with ZeRO Stage 3 - please adjust
            # your config"
            r"\bZeRO inference only makes sense with ZeRO Stage 3\b",
            # transformers/accelerate filling a ds_config's "auto" values from the trainer's arguments:
            # a key left "auto" that no argument fills ("`zero_optimization.prefetch_bucket_size` not
            # found in kwargs. Please specify ... without `auto` (set to correct value)")
            r"` not found in kwargs\. Please specify `[\w.]+` without `auto`",
            # a --deepspeed_config that is no file on this node (written on the first node only): DeepSpeed
            # then reads the string as a base64-encoded config, and decoding it fails; accelerate's
            # HfDeepSpeedConfig (the Trainer's --deepspeed) does the same with its own argument name
            r"\bconfig_decoded = base64\.urlsafe_b64decode\(config(?:_file_or_dict)?\)",
            # ... and then says so: "ValueError: Expected a string path to an existing deepspeed
            # config, or a dictionary, or a base64 encoded string. Received: deepspeed.json" (a path
            # relative to another working directory, a typo), or as the raise's own source line
            # where a pasted traceback lost the message
            r"\bExpected a string path to an existing deepspeed config\b",
            # ... and DeepSpeed's own checks that a configuration was given at all and is a file
            # (deepspeed.initialize(), the engine's argument check in older releases)
            r"\bDeepSpeed requires --deepspeed_config to specify configuration file\b",
            r"\bDeepSpeed configuration file: .* is not an existing file\b",
        ),
        "DeepSpeed refused its configuration (the ds_config JSON or what the trainer integration built "
        "from it): a ZeRO option that does not go with the others, a field of the wrong type, or no "
        "config file at the path given.",
        "Give the path of a ds_config that exists on every node (relative paths are read from the "
        "working directory); fix the field the line names (e.g. use DeepSpeed's own optimizer, or "
        '`"zero_force_ds_cpu_optimizer": false`, with ZeRO-Offload; `offload_optimizer` is an object '
        '`{"device": "cpu"}`); https://www.deepspeed.ai/docs/config-json/ lists every field.',
    ),
    FailureSignature(
        "parallelism_config_invalid",
        (
            # the experts do not split over the expert-parallel group (fms-acceleration: "moe num
            # experts (62) not divisible by ep_shard_factor (4)")
            r"\bexperts \(\d+\) (?:is )?not divisible by (?:ep|expert)\w*",
            # torchtitan's ParallelDims check ("Invalid parallel dims: dp(1) * sp(2) * pp(3) != WORLD_SIZE(8)")
            r"\bInvalid parallel dims: \w+\(-?\d+\)",
            # openpi's mesh ("Number of devices 4 must be divisible by the number of FSDP devices 8.")
            # and Paddle fleet's hybrid degrees that do not multiply to the workers ("global work size
            # [8], mp_degree [1], sharding_degree [2], pp_degree [1], dp_degree [2].")
            r"\bNumber of devices \d+ must be divisible by the number of \w+ devices \d+",
            r"\bglobal work size \[\d+\], mp_degree \[\d+\], sharding_degree \[\d+\]",
            # vLLM asked for more GPUs (TP x PP) than its Ray placement group holds (RL rollouts)
            r"number of required GPUs exceeds the total number of available GPUs in the placement group",
            r"num_layers[ =:].*(must be|should be|is not) divisible by",  # "num_layers=60 should be..."
            # (old Megatron-LM's interleaved schedule: "number of layers per pipeline stage must be
            # divisible number of layers per virtual pipeline stage")
            r"[Nn]umber of layers (?:per (?:virtual )?pipeline stage )?(?:should|must) be divisible",
            r"num_attention_heads .*(must be|should be|is not) divisible by(?! num_query_groups)",
            r"num_query_groups .*(must be|should be|is not) divisible by",
            # megatron-core's newer wording (TransformerConfig): "a multiple of", not "divisible by"
            r"must be a multiple (?:or divisor )?of (?:the )?(?:tensor|pipeline|context|expert|data)[_ -]?(?:model[_ -])?parallel",
            # a rule between two parallel settings, raised as an error (Megatron's arguments.py and
            # ModelParallelConfig: "When using MoE and tensor parallelism, sequence parallelism must be
            # used", "Cannot use sequence parallelism without tensor parallelism")
            r"(?:Error|Exception): "
            + _IN_ONE_MESSAGE
            + r"\b(?:sequence|tensor|pipeline|context|expert)[ _-](?:model[ _-])?parallel(?:ism)?\b"
            + _IN_ONE_MESSAGE
            + r"\b(?:must be (?:used|enabled|set)|is required|requires|[Cc]annot|without)\b",
            # the interleaved (virtual pipeline) schedule's micro-batch rules (schedules.py)
            r"[Nn]umber of (?:contiguous )?micro-?batches\b.*(?:should|must) (?:range|be)\b",
            r"[Nn]umber of micro-?batches \(?\d*\)? is not divisible by",
            r"(must|should) be divisible by (the )?(tensor|pipeline|context|expert)[ _-]",
            r"^\S*\s*AssertionError: \d+ is not divisible by \d+",
            r"pipeline-model-parallel-size .*requires",
            # Megatron-LM's validate_args before 2024: the interleaved schedule with too few stages
            # ("pipeline-model-parallel size should be greater than 2 with interleaved schedule")
            r"(?:pipeline|tensor|context|expert)-model-parallel size should be (?:greater|larger|at least)\b",
            # the kit's trainer (workshop_lib/train/arguments.py)
            r"world size \d+ is not divisible by tensor x pipeline x context parallel",
            r"is not divisible by --(tensor|pipeline|context|expert)-model-parallel-size \d+",
            # megatron-core's parallel_state names the sizes as variables ("data_parallel_size (1) is
            # not divisible by expert_model_parallel_size")
            r"\b(?:data|tensor|pipeline|context|expert)_(?:model_)?parallel_size \(\d+\) is not divisible by",
            r"--num-layers \d+ does not split into \d+ pipeline stages",
            r"--data-parallel-size \d+ does not match world size",
            r"expert parallel \d+ x expert tensor parallel \d+ exceeds the \d+ ranks",
            # megatron-core (parallel_state.py), DeepSpeed, vLLM and other trainers' wordings, also
            # without the "is" (fms-acceleration's ScatterMoE: "world size (2) not divisible by ep_size (4)")
            r"[Ww]orld[_ ]size:? \(?\d+\)? (?:is )?not divisible by",
            r"[Ww]orld size \d+ must be divisible by the product of",
            r"(?:tensor|pipeline|tp|pp)_?\w* \* (?:tensor|pipeline|tp|pp)_?\w* must be equal to world_size",
            r"heads? (?:\(\d+\) )?must be divisible by (?:the )?(?:world size|mp_size|tensor parallel size|tp_size|tp size)",
            # sequence parallelism that splits attention heads (DeepSpeed's Ulysses: "Attention head
            # count 28 is not divisible by SP size 8")
            r"\b[Hh]ead count \d+ is not divisible by (?:SP|sp|sequence parallel) size \d+",
            # the product of the parallel sizes is not the number of processes launched: nanotron's
            # ParallelContext, torchtitan's ParallelDims
            r"number of process(?:es)? requires? to run all replicas \(\d+\)",
            r"Invalid parallel dims: .*!= WORLD_SIZE\(\d+\)",
            r"must be divisible by (?:ep|tp|pp|cp|dp|mp)_size",
            # megatron-core's parallel_state checks of derived sizes ("Expert data parallel size should
            # be divisible by partial DistOpt shard factor")
            r"\bparallel size (?:should|must) be divisible by",
            # Megatron-LM's distributed optimizer before it padded its grad buffers (2023): each
            # bucket is split evenly over the data-parallel ranks, so a data-parallel size that does
            # not divide it (6 ranks: "Each bucket's buffer size should be divisible by 6") is refused
            r"\bEach bucket's buffer size should be divisible by \d+",
            # the failing assert's own source line, as a traceback quotes it when the message line is
            # cut off (Megatron's validate_args: "assert num_layers %
            # args.transformer_pipeline_model_parallel_size == 0, \"): layers, heads or the world size
            # against a parallel size (a batch size against one is batch_size_not_divisible's), also
            # as another stack spells it (TensorRT-LLM's attention: "assert self.num_heads % tp_size
            # == 0", a bare AssertionError under verl's rollout)
            _SOURCE_LINE
            + r"assert\s+\(?(?:\w+\.)?(?:\w*num_layers|num_(?:attention_|kv_|key_value_)?heads|num_query_groups"
            r"|world_size)\w*\s*%\s*\(?(?:\w+\.)?(?:\w*(?:tensor|pipeline|context|expert)_(?:model_)?parallel_size\w*"
            r"|(?:tp|pp|cp|ep|mp)_size)\)?\s*==\s*0\b",
        ),
        "The parallel layout does not fit the model or the GPU count (world size vs TP x PP x CP, "
        "layers vs pipeline stages, heads vs tensor parallel size).",
        "Pick sizes that divide: TP x PP x CP must divide the number of GPUs, layers must divide by "
        "PP (x virtual stages), heads and query groups by TP; `workshop plan --search` lists valid ones.",
    ),
    FailureSignature(
        "model_config_invalid",
        (
            # an inference engine's refusal (vLLM, SGLang rollouts): prompt and completion longer than
            # the model's positions
            r"exceeds the model's maximum context length",
            # ... and verl's own check of its rollout before it starts one (max_position_embeddings
            # against prompt_length + response_length: "AssertionError: model context length should
            # be greater than total sequence length")
            r"\bmodel context length should be greater than total sequence length\b",
            # ... or a context length asked for beyond the model's own positions ("User-specified
            # max_model_len (37192) is greater than the derived max_model_len (max_position_embeddings
            # =32768 ...)", vLLM as an RL trainer's rollout engine)
            r"\bUser-specified max_model_len \(\d+\) is greater than the derived max_model_len\b",
            # the kit's trainer (workshop_lib/train/arguments.py): shape rules of the model itself
            r"--hidden-size \d+ is not divisible by --num-attention-heads \d+",
            r"--num-attention-heads \d+ is not divisible by --num-query-groups \d+",
            r"--seq-length \d+ exceeds --max-position-embeddings \d+",
            r"--moe-router-topk \d+ exceeds --num-experts \d+",
            # megatron-core's TransformerConfig checks of the same rules
            r"num_attention_heads \(?\d*\)? ?must be (?:divisible by|a multiple of) (?:the )?num_query_groups",
            r"[Hh]idden[ _]size \(?\d*\)? ?(?:must be|should be|is not) divisible by num_(?:attention_)?heads",
            r"embed_dim must be divisible by num_heads",  # torch.nn.MultiheadAttention
            # without those checks (megatron-core before 0.16) a bad head/group count only shows as a
            # reshape to sizes the tensor does not have, in the first forward pass (Megatron-LM#5755).
            # Not an empty input (size 0): sizes that do not fit leave a tensor with elements, while
            # an empty one came from elsewhere (no tokens routed to a MoE rank, an empty batch)
            r"RuntimeError: shape '\[[-\d, ]+\]' is invalid for input of size (?!0\b)\d+",
            # FP8 GEMMs take only dimensions in whole tiles (16 for the inner and output sizes, 8 for
            # the tokens): Transformer Engine's check of a layer's input and weights, and PyTorch's
            # own _scaled_mm ("mat2 shape (768x8 must be divisible by 16": a vocabulary of 8)
            r"\bFP8 execution requires .{0,160}\bdivisible by \d+",
            r"Tensor dimensions are not compatible for FP8 execution",
            r"\bmat[12] shape \(\d+x\d+ must be divisible by 16\b",
        ),
        "The model's own sizes do not fit together (hidden size vs attention heads, heads vs query "
        "groups, sequence length vs position embeddings, router top-k vs experts, or a size FP8 "
        "matrix multiplies cannot take: not a multiple of 16): the trainer refused to start, or a layer "
        "reshaped a tensor by sizes that do not divide ('shape [...] is invalid for input of size N').",
        "Change the flags the line names: --hidden-size a multiple of --num-attention-heads, heads a "
        "multiple of --num-query-groups, --max-position-embeddings >= --seq-length (`workshop plan` "
        "checks these before a run); with FP8, the hidden, FFN and (padded) vocabulary sizes of each "
        "tensor-parallel shard multiples of 16, and micro-batch x sequence length a multiple of 8.",
    ),
    # --- data -------------------------------------------------------------------------------------
    FailureSignature(
        "dataset_index_corrupt",
        (
            r"bad header, cannot read",
            r"bad version, cannot read",
            r"Index file doesn'?t match expected format",
            # megatron-core's bare assert (0.16 spells it self.index.sequence_lengths...)
            r"assert self\.(index\.)?sequence_lengths\.shape\[0\] == self\.(index\.)?document_indices\[-1\]",
            r"cannot mmap an empty file",
            r"mmap length is greater than file size",
            # the kit's own index reader (workshop_lib/data/indexed.py), run by `workshop train` and
            # every rank before megatron-core opens the files
            r"\.idx: not a Megatron indexed dataset \(bad magic\)",
            r"\.idx: truncated or corrupt index",
            r"\.idx: corrupt index: ",  # the kit's own full check of an index (data.indexed)
            r"\.idx: unsupported index version",
            r"\.bin: \d+ bytes but the index expects \d+",
            r"\.bin: missing \(the \.idx is there\)",
            # numpy's view of a truncated .bin/.idx (np.frombuffer with an offset past the end)
            r"offset must be non-negative and no greater than buffer length",
        ),
        "The dataset's .idx/.bin pair is truncated, empty, or not in Megatron's MMapIndexedDataset "
        "format (an interrupted prep-data run, a copy that did not finish, or a merge that skipped "
        "the document index).",
        "Re-run `workshop prep-data` (it writes .bin/.idx atomically) and copy both files again; "
        "pass the prefix without the .bin/.idx suffix in --data-path.",
    ),
    FailureSignature(
        "dataset_path_missing",
        (
            r"No such file or directory: '[^']*(_document)?\.(idx|bin)'",
            r"Index file does not exist",
            r"--data-path \S+: \S+\.(bin|idx) not found",  # the kit's trainer (train/data.py)
            # older Megatron (megatron/data/indexed_dataset.py) prints this and returns None
            r"Dataset does not exist: \S+",
            # TensorFlow Datasets finding no dataset of that name under --data_dir (RLDS loaders of
            # robot-learning trainers: "DatasetNotFoundError: Dataset aloha_game not found.")
            r"\bDatasetNotFoundError: Dataset \S+ not found\.",
            r"Path should be a basename that both \.idx and \.bin can be appended",
            # other trainers' loaders naming the data file they cannot find (LLaMA-Factory, others);
            # the exception's name keeps the gate off healthy runs' many "... not found" warnings
            r"(?:Error: File |Exception: File )\S+\.(?:jsonl?|parquet|arrow|csv|tsv|txt|bin|idx)\b\S* not found\b",
            # a missing file whose extension says it is training data (not .json: configs are JSON too)
            r"FileNotFoundError: '?\S+\.(?:jsonl|parquet|arrow)(?:\.gz|\.zst)?'? not found\b",
            r"No such file or directory: '[^']*\.(?:jsonl|parquet|arrow)(?:\.gz|\.zst)?'",
            # ... or an image a sample names (a text-to-image or vision-language set whose relative
            # image paths do not resolve from where the job runs: "'images/example_1.png'")
            r"FileNotFoundError: \[Errno 2\] No such file or directory: '[^']*\.(?:png|jpe?g|webp)'",
            # Hugging Face datasets resolving data_files that match nothing
            r"FileNotFoundError: Unable to find '",
            # ... where a Ray actor's traceback puts the exception's name on a line of its own, and
            # the message alone below it names a data file
            r"^Unable to find '[^']*\.(?:jsonl?|parquet|arrow|csv|tsv)'\s*$",
            # Azure ML's dataset reader given a path with nothing in it ("Cannot load any data from the
            # specified path. Make sure the path is accessible and contains data.")
            r"\bCannot load any data from the specified path\. Make sure the path is accessible\b",
            # a medical image volume (NIfTI, MetaImage, NRRD, DICOM) that a loader cannot open: such
            # files are the training data of the imaging stacks (nibabel's "FileNotFoundError: No such
            # file or no access: '.../BraTS20_Training_085_flair.nii'" under MONAI's LoadImage)
            r"(?:FileNotFoundError|No such file or directory)\W[^'\"]*['\"][^'\"]*\.(?:nii(?:\.gz)?|mh[ad]|nrrd|dcm)['\"]",
            # DeePMD-kit (under DP-GEN) finding no training system at the paths its parameter file lists
            # ("OSError: [Error cannot find valid a data system] Please check your setting for data
            # systems"; DP-GEN's common-errors page: the dataset paths are set wrong) (from "find": with
            # "cannot" first, its gate would share "cannot " with dataset_index_corrupt's "cannot
            # read" and catch every line that says "cannot")
            r"\bfind valid a data system\b",
            # PaddleSeg's datasets (Cityscapes, ADE20K, VOC...) finding no data at dataset_root, in its
            # own spelling: "ValueError: The dataset is not Found or the folder structure is
            # nonconfoumance."
            r"\bor the folder structure is nonconfoumance\b",
            # NVIDIA DALI's readers (RecordIO, TFRecord, webdataset tar) opening a data file
            r"Could not open file \S+\.(?:rec|idx|tfrecords?|tar|bin)\b:? No such file or directory",
            r"file_loader\.cc:\d+\] Assert on \"dir != nullptr\" failed: Directory \S+ could not be opened",
            # any missing file or folder whose path names training data by a component of its own
            # ("/workspace/data_phase2", ".../imagenet/ILSVRC2012/train", "annotations/instances_val2017
            # .json", "coco_train2017_pyt"), not a checkpoint, output, model or tokenizer under a data
            # folder (those are other failures: a run's own output folder, a model not downloaded).
            # A cache under a data folder is the data as the run reads it: a preprocessed
            # "/data/ncf/cache/ml-20m/test_negatives.pt", or Megatron's index cache
            # ("data/index-cache/<hash>_doc_idx.npy") that rank 0 builds and a second node cannot see
            # (node-local disk) or reads before rank 0 finished writing it (the fix says both);
            # the path may carry literal quotes of its own, from a config or script that quoted it
            # twice ("No such file or directory: '\"/leonardo_work/.../datasets/ShareGPT.json\"'")
            r"(?:FileNotFoundError|No such file or directory)\W[^'\"]*['\"]\"?"
            r"(?![^'\"]*(?:checkpoint|tmp|output|result|log|token|vocab|model|weight|"
            + _SETTINGS_FILE_WORDS
            + "))"
            r"(?:[^'\"]*/)?(?i:data|datasets?|train(?:ing)?|val(?:id|idation)?|coco\w*|imagenet|ILSVRC\w*"
            r"|annotations?|corpus|corpora"
            # ... and Kaggle's mount point of every dataset and competition attached to a notebook
            # ("/kaggle/input/vesuvius-challenge-ink-detection/test": the data was not added to it)
            r"|kaggle/input)(?:['\"/_.\-]|\d)",
        ),
        "A data file the run reads does not exist where it looks: the --data-path prefix, a dataset "
        "file, or the index cache that rank 0 builds from them.",
        "Check the prefix (without .bin/.idx) and that the shared volume holding it is mounted at the "
        "same path in every pod. A missing index-cache file (`*_doc_idx.npy`, `*-document_index.npy`) "
        "on another node means that node cannot see rank 0's cache (put --data-cache-path on storage "
        "every node shares) or read it before rank 0 finished writing it (build the cache once before "
        "the multi-node launch).",
    ),
    FailureSignature(
        "dataset_too_small",
        (
            r"assert num_samples > 0",
            r"AssertionError: .*num_samples",
            r"[Nn]ot enough (samples|documents|tokens)",
            r"split .* (has|got) no (samples|documents)",
            # the kit's trainer (workshop_lib/train/data.py check_split_plan)
            r"--split .* leaves the \w+ split of .* less than one sequence",
            r"--split .*: the train split is 0",
            # other trainers' wording of an empty split
            r"[Ss]plitter returned no (?:training|validation|test) samples",
            # a sampler or loader handed an empty dataset: torch's RandomSampler ("num_samples should be
            # a positive integer value, but got num_samples=0"), other trainers' "num samples is empty"
            r"num[_ ]samples is empty",
            r"\bnum[_ ]samples ?[=:] ?0\b",
            r"[Vv]alidation set size is configured to be larger than (?:the )?entire dataset",
            r"[Dd]ataset \S+ is empty",
            # a dataset that is empty after preprocessing: LLaMA-Factory's "RuntimeError: Empty
            # dataset!" (or the raise itself, the innermost frame of a traceback cut before its last
            # line), and TRL's packing with too little text for one sequence
            r"Error(?::|\(\S?) ?Empty dataset\b",
            r"enough samples to at least yield one packed sequence",
            # llm.c's data loader: a shard smaller than one batch of every process
            r"Assertion .shard_ntok >= \(int64_t\) \(num_processes \* B \* T \+ 1\). failed",
            # transformers' Trainer when the training iterator runs dry (fewer examples than one batch,
            # or an IterableDataset shorter than max_steps): it stops there, at warning level
            r"There seems (?:to be )?not a single sample in your epoch_iterator, stopping training at step \d+",
            # ... and accelerate's data loader when an iterable dataset runs dry on a rank before the
            # step count the trainer expects (max_steps longer than the data: "Batch does not contain
            # any data (`None`). At the end of all iterable data available before expected stop
            # iteration.")
            r"\bAt the end of all iterable data available before expected stop iteration\b",
            # open_lm's webdataset shard planner: more shards asked for one epoch than the manifests
            # hold (logged before it re-raises the IndexError), and its multi-pass retry giving up
            r"Number of shards requested for a single epoch is more than the number of shards available",
            r"Multiple passes over the dataset did not allow for a valid shard string to be created",
            # Lightning's fit loop with a train dataloader of length 0 (fewer samples than one batch
            # with drop_last, or no samples): it logs this at info level and returns without a step
            r"`Trainer\.fit` stopped: No training batches\b",
        ),
        "A split (train/validation/test) gets no samples: the corpus is too small for --split, "
        "--seq-length and the requested iterations, a split weight is 0 while evaluation asks "
        "for it, or the data path matched no data at all.",
        "Use a larger corpus or smaller --seq-length; give every evaluated split a share of --split "
        "(e.g. 98,2,0 with --eval-iters > 0), or set --eval-iters 0 with --split 100,0,0.",
    ),
    FailureSignature(
        "vocab_mismatch",
        (
            # CPU (gloo) runs: the embedding lookup of a token id >= the model's vocabulary
            # (tests/test_fault_injection.py: data from the sample tokenizer, --vocab-size 1000)
            r"IndexError: index out of range in self",
            # the same lookup on a GPU: a device-side assert in the gather kernel (ATen's
            # Indexing.cu indexSelect{Small,Large}Index; newer releases' vectorized gather)
            r"Assertion `srcIndex < srcSelectDimSize` failed",
            r"vectorized gather kernel index out of bounds",
        ),
        "A token id in the data is larger than the model's vocabulary: the dataset was tokenized with "
        "another (larger) tokenizer than the one given to training (--tokenizer-type/--tokenizer-model, "
        "or a NullTokenizer --vocab-size that is too small).",
        "Train with the tokenizer the data was prepared with (`workshop prep-data` records it in "
        "dataset.json), or re-run prep-data with the training tokenizer; --vocab-size must be the "
        "largest token id + 1.",
    ),
    # --- checkpoints ------------------------------------------------------------------------------
    FailureSignature(
        "checkpoint_mismatch",
        (
            r"size mismatch for \S+: copying a param with shape",
            r"Global shape mismatch for loaded",
            r"Error\(s\) in loading state_dict",
            r"(Missing|Unexpected) key\(s\) in state_dict",
            # ... but not dist_checkpointing's own integrity checks of a sharded state dict being
            # saved (validation.py: "Flattened ranges dont cover the whole shard", "Invalid access
            # pattern"): a bug in how the model declares its shards, with no checkpoint to mismatch
            r"CheckpointingException: (?!Flattened ranges dont cover|Invalid access pattern)",
            # the kit's trainer comparing the flags saved with the checkpoint before loading it
            r"the flags describe another model than the checkpoint",
            # Meta's llama loader (a checkpoint saved for another model-parallel size)
            r"Loading a checkpoint for MP=\d+ but world size is \d+",
            # DeepSpeed's Megatron checkpoint loader (state_dict_factory.py) finding fewer or more
            # model-parallel files than the checkpoint was saved with ("AssertionError: checkpoint
            # count 1 is different from saved mp_world_size 2"): a partial copy, or another TP layout
            r"\bcheckpoint count \d+ is different from saved mp_world_size \d+",
            # Megatron-LM's check_checkpoint_args on a legacy checkpoint (padded_vocab_size, num_layers,
            # hidden_size, tensor/pipeline sizes...)
            r"(?<=\w) value from checkpoint \(.*\) is not equal to the input argument value",
            # ... or its traceback alone, cut before that message: a frame in check_checkpoint_args
            # shows only when one of its _compare asserts failed (it raises nothing else)
            r"checkpointing\.py\", line \d+, in check_checkpoint_args$",
            # DeepSpeed's ZeRO optimizer state saved at another data-parallel size (runtime/engine.py
            # _load_zero_checkpoint); the exception's name may stand alone on the line before
            r"checkpoint being loaded used a DP world size of \d+ but the current world size is \d+",
            # torchtitan's dataloader state: another data-parallel degree than at save time
            r"is inconsistent before and after checkpoint",
            # torch.distributed.checkpoint's load planner (torchtitan, FSDP2, Megatron-Bridge's
            # torch_dcp format) finding a key the model has and the checkpoint lacks, or a weight of
            # another shape (torch/distributed/checkpoint/default_planner.py). DCP reshards on load,
            # so another model shows first in its weights; a mismatch in the optimizer's state alone
            # is a sharded layout the loader does not expect (Megatron-LM#4129: Megatron-FSDP's
            # flattened DTensor state in a test harness), not another model
            r"\bMissing key in checkpoint state_dict: \S",
            # Flax handed parameters (a restored checkpoint) of another shape than the module would
            # create (flax.errors.ScopeParamShapeError: "Initializer expected to generate shape (8,
            # 4096) but got shape (32, 4096) instead for parameter "embedding" in ..."): the
            # checkpoint was saved for another configuration (vocabulary, width)
            r"\bInitializer expected to generate shape \([\d, ]*\) but got shape \([\d, ]*\) instead for parameter\b",
            # torch's "size mismatch for <key>: copying a param with shape ..." where a mail client or
            # an issue's paste broke it after "for", leaving the words alone on their line (sd-scripts
            # resuming a LoRA state of another rank)
            r"^\s*size mismatch for\s*$",
            # torch's Optimizer.load_state_dict comparing the saved parameter groups with the
            # optimizer's (torch/optim/optimizer.py: "loaded state dict contains a parameter group
            # that doesn't match the size of optimizer's group"): a resume whose model gained or lost
            # parameters since the optimizer state was saved
            r"\bthat doesn't match the size of optimizer's group\b",
            r"\bSize mismatch between saved (?:torch\.Size\()?\[[\d, ]*\]\)? and current: "
            r"(?:torch\.Size\()?\[[\d, ]*\]\)? for (?!optim)",
        ),
        "The checkpoint in --load was saved with a different model shape or parallel layout than the "
        "current flags.",
        "Load with the same model flags (layers, hidden size, vocab padding) and, for legacy "
        "checkpoints, the same TP/PP (and the same data-parallel size where the optimizer state is "
        "sharded: DeepSpeed ZeRO, a legacy distributed optimizer); convert with tools/checkpoint "
        "(DeepSpeed: ds_to_universal, then --universal-checkpoint), or save in the torch_dist format "
        "(--ckpt-format torch_dist) which reshards on load; --no-load-optim --no-load-rng when only "
        "the weights are wanted.",
        # not a load that only warns: mmcv's and mmengine's load_checkpoint are non-strict by default,
        # log "<logger> - WARNING - The model and loaded state dict do not match exactly" over torch's
        # "size mismatch for ..." lines, skip those weights and train on (a fine-tune from another
        # dataset's head does it on purpose); with strict=True the same text is a RuntimeError. The
        # warning's level may be coloured ("\x1b[33mWARNING\x1b[0m - The model ...", in a notebook's
        # JSON too), or the message printed alone when no logger was given (mmaction2's tutorial)
        # (the check for "Error: " looks back from the first letter, so the pattern starts with a literal)
        unless=(r"T(?<!Error: T)he model and loaded state dict do not match exactly",),
    ),
    FailureSignature(
        "lr_schedule_mismatch",
        (
            # megatron-core's OptimizerParamScheduler on resume ("checkpointvalue" is its spelling)
            # ... and its 2019-2022 name, AnnealingLR (megatron/learning_rates.py), whose message
            # ran "class input valueand checkpoint values for {name}" (sic) before the values were added
            r"\b(?:OptimizerParamScheduler|AnnealingLR): class input value.*?and checkpoint ?values?\b",
            # `workshop train`'s own check of a resume, before any rank starts
            r"give another learning-rate/weight-decay schedule than the checkpoint's",
        ),
        "The run resumes from a checkpoint whose learning-rate schedule (total iterations, warm-up, "
        "decay, lr, min-lr) differs from these flags: megatron-core refuses to pick one silently "
        "(e.g. --train-iters changed between the two runs).",
        "Resume with the schedule flags of the first run, or pass --override-opt_param-scheduler to "
        "take the new flags (--use-checkpoint-opt_param-scheduler keeps the checkpoint's schedule).",
    ),
    # --- storage ----------------------------------------------------------------------------------
    FailureSignature(
        "disk_full",
        (
            # after shm_too_small in this table: a line naming /dev/shm or torch's shm files is that
            # strerror's "No space left on device" (Errno 28), and Go's lowercase one (containerd,
            # the kubelet, a node agent unpacking an image layer onto a full root volume)
            r"[Nn]o space left on device",
            # torch.save's zip writer on a full disk (the same run, other timing: the write that fails
            # is inside a tensor file, and torch reports where the file ended, not ENOSPC)
            r"\[enforce fail at inline_container\.cc:\d+\] \. unexpected pos \d+ vs \d+",
            r"PytorchStreamWriter failed writing file",
            # a user's or project's quota on a shared file system (EDQUOT), full for this run
            r"[Dd]isk quota exceeded",
            # the kubelet evicting a pod whose container disk (ephemeral storage, emptyDir) filled up:
            # a checkpoint written inside the container instead of on the shared volume
            r"ephemeral local storage usage exceeds the total limit",
            r"The node was low on resource: ephemeral-storage",
            # ... and the kubelet refusing or evicting pods while the node's own disk is nearly full
            # (its MemoryPressure twin is host memory)
            r"The node had condition: \[DiskPressure\]",
            r"Usage of EmptyDir volume \S+ exceeds the limit",
            # Ray's object store spilling to a local disk that is full (its own exception and words)
            r"\bOutOfDiskError: Local disk is full",
            r"local disk's utilization is over capacity",
        ),
        "A file system the run writes to is full (checkpoint --save folder, logs, data cache): the write "
        "failed with ENOSPC and the checkpoint being written is incomplete.",
        "Free space or point --save at a larger volume (`df -h DIR`); keep fewer checkpoints (`workshop "
        "checkpoints DIR` shows their sizes); an incomplete iter_ folder is not what --load picks up.",
    ),
    # --- Triton -----------------------------------------------------------------------------------
    FailureSignature(
        "triton_cache_hang",
        (
            r"file lock '[^']*triton[^']*' could not be acquired",
            r"Timeout.*acquir\w* .*lock.*triton",
            r"triton.*(waiting|timed out).*lock",
        ),
        "Processes are waiting on Triton's JIT cache lock: all ranks compile the same kernels into "
        "one cache directory and block each other, so training stalls at the first forward pass.",
        "Set TRITON_CACHE_DIR to a local path (e.g. /tmp/triton_cache), one per pod.",
    ),
    FailureSignature(
        "triton_cache_shared_fs",
        (
            # ... or torch inductor's code cache (/tmp/torchinductor_<user> by default), which its
            # ranks share the same way: a rename of a file another rank renamed first
            r"(Stale file handle|Device or resource busy|FileNotFoundError).*(\.triton/cache|triton_cache|torchinductor_)",
            r"TRITON_CACHE_DIR=/(fsx|shared|lustre|mnt|home)\b",
            r"(\.triton/cache|triton_cache).*(Stale file handle|Device or resource busy)",
            # DeepSpeed's own warning (deepspeed/ops/transformer/inference/triton/matmul_ext.py)
            r"[Tt]riton autotune, \S+, appears to be on an NFS system",
            # torch inductor reading an autotune cache file another process is still writing: the
            # traceback passes through its loader (torch/_inductor/triton_heuristics.py)
            r"\b_?load_cached_autotuning\(",
        ),
        "The Triton kernel cache is on a shared file system (FSx/NFS/home), or one cache directory is "
        "shared by every rank: concurrent compiles from many processes race on it (stale handles, "
        "missing files, busy renames).",
        "Set TRITON_CACHE_DIR=/tmp/triton_cache (local disk) in the job environment, and "
        "TORCHINDUCTOR_CACHE_DIR likewise when the model is compiled with torch.compile; where ranks "
        "still collide, give each local rank its own directory.",
    ),
    # --- training numerics (also derived from parsed iteration lines) ------------------------------
    FailureSignature(
        "nan_loss",
        (
            r"\b(lm loss|loss): +[-+]?(nan|inf)\b",
            NAN_ITERATIONS_PATTERN,
            r"found NaN in local grad norm",
            r"[Ll]oss is (NaN|nan|NAN|inf|Inf|Infinity)",
            # a trainer's own NaN check raising ("ValueError:  [x] nan loss ", DDSP-SVC's solver)
            r"(?:Error|Exception): .{0,40}\b(?:nan loss|NaN loss|NAN loss)\b",  # (gated on all three words)
            # Coqui's Trainer, one total loss per optimizer ("| > loss_0: nan  (nan)", VITS and GANs)
            # (gated on its "| > " prefix: "loss" alone is in every healthy iteration line)
            r"\| > loss_\d:? +(?:nan|NaN)\b",
            # DeepXDE's table ("Step  Train loss  Test loss  Test metric", then "2000  [nan]  [nan]
            # [nan]"): a step whose training losses, a bracketed list, hold a NaN
            r"^\s*\d+\s+\[(?:[-+\d.e]+, )*nan\b[^\]]*\]\s+\[",
            # fast.ai course-v3's AvgStatsCallback ("train: [nan, tensor(0.0986, device='cuda:0')]"):
            # each epoch's stats as a list whose first value is the loss (spelt out per split, so that
            # the pattern's gate is "train: [", not the "train" of every healthy line)
            r"\b(?:train: \[(?:nan|inf)|valid: \[(?:nan|inf)), ",
            # other trainers' and older Megatron/DeepSpeed spellings: no colon, capitals, Infinity, tables
            # ... and any snake_case loss key (NeMo/Lightning's "reduced_train_loss=nan.0", "val_loss")
            # ... and a JSON record's quoted value (fairseq's epoch stats: '"train_loss": "nan"')
            r"(?:\b|_)(?:lm[ _])?[Ll]oss\b[\'\"]?\s*[:=|]?\s*\"?[-+]?(?:nan|NaN|NAN)\b",
            # ... inf as well, but not a best-so-far sentinel a trainer prints in its start-up
            # configuration ("'best_train_loss': inf", "best_valid_loss=inf", "min_loss: inf")
            r"(?:\b|(?<!best)(?<!best_train)(?<!best_valid)(?<!best_val)(?<!best_eval)(?<!best_dev)(?<!min)_)"
            r"(?:lm[ _])?[Ll]oss\b[\'\"]?\s*[:=|]?\s*[-+]?(?:inf|Inf|INF|Infinity)\b",
            NONFINITE_GRAD_NORM_PATTERN,
            # DeepSpeed's fp16 loss scaler giving up (deepspeed/runtime/fp16/loss_scaler.py)
            r"Current loss scale already at minimum",
            # other trainers' give-up on fp16 overflow: gpt-neox's OverflowMonitor, fairseq's scaler
            r"Skipped \d+ iterations in a row due to [Oo]verflow",
            r"Minimum loss scale reached \(",
            # icefall's (and k2 recipes', ZipVoice's) scaler checks: a warning once the scale is under
            # 0.01 (collapsed, by LOSS_SCALE_COLLAPSE's rule), then a "bad-model" saved and an exit
            r"\bGrad scale is small: \d",
            r"\bgrad_scale is too small, exiting\b",
            # tf_cnn_benchmarks' table (Horovod's and the clouds' benchmark runs): "<step>  images/sec:
            # 2022.2 +/- 0.0 (jitter = 0.0)  nan", its last column the loss
            r"^\s*\d+\s+images/sec: .*\)\s+[-+]?(?:nan|NaN|inf|Inf)\s*$",
            # a bare "<step> <loss>" print (yanmtt#7)
            r"^\s*\d+\s+[-+]?(?:nan|NaN|NAN|inf|Inf)\s*$",
            # the kit's trainer stopping at the first NaN/Inf loss or gradient norm (train/trainer.py)
            r"the run diverged at iteration \d+ \(",
            # a trainer's own divergence check (MLPerf's UNet3D reference: "MODEL DIVERGED")
            r"\bMODEL DIVERGED\b|\b[Mm]odel (?:has )?diverged\b",
            # a trainer's running mean of its losses refusing a non-finite one (yolact's MovingAverage:
            # "Warning: Moving average ignored a value of nan")
            r"\bignored a value of (?:nan|inf)\b",
            # a trainer's own finiteness check giving up (SpeechBrain's "Loss is not finite and
            # patience is exhausted"; "non-finite loss" in others)
            r"\b[Ll]oss (?:is|was|became) (?:not finite|non-finite|infinite)\b|\b[Nn]on-finite loss\b",
            # a loss printed as the tensor autograd computed it ("pass 2 tensor(nan, device='cuda:0',
            # grad_fn=<CopyBackwards>)"), and the perplexity, exp(loss), reported as NaN
            r"\btensor\([-+]?(?:nan|inf), device='[^']*', grad_fn=<",
            r"\b[Pp]erplexity\b:?\s*[-+]?(?:nan|NaN|inf)\b",
            # autograd's anomaly mode (torch.autograd.detect_anomaly) stopping at the first backward
            # function whose gradient came out NaN: "Function 'SqrtBackward0' returned nan values in
            # its 0th output."
            r"\bFunction '\w+' returned nan values in its \d+th output\b",
            # transformers' DebugUnderflowOverflow (--debug underflow_overflow) dumping the frames
            # before the first inf/nan activation, then aborting the run
            r"\bDetected inf/nan during batch_number=\d+",
            r"\bDebugUnderflowOverflow: inf/nan detected, aborting\b",
            # JAX's jax_debug_nans/jax_debug_infs stopping at the jitted step that produced one
            # ("FloatingPointError: invalid value (nan) encountered in jit(compiled_train_step)"),
            # also as a notebook's JSON error record ('"message": "invalid value (nan) ...'); numpy's
            # RuntimeWarning "invalid value encountered in divide" has no "(nan)"
            r"\binvalid value \((?:nan|inf)\) encountered in \S",
        ),
        "The loss became NaN/Inf: the run diverged (learning rate too high, fp16 overflow, bad data) "
        "or a GPU produced corrupt results.",
        "Resume from the last good checkpoint with a lower --lr or longer --lr-warmup-iters, prefer "
        "--bf16 over --fp16, keep --clip-grad 1.0, and check the data around the failing iteration.",
    ),
    FailureSignature(
        "skipped_iterations",
        (),  # derived from iteration lines: SKIP_GRACE_ITERATIONS, SKIP_STUCK_REPORTS
        "Iterations keep being skipped, long after the start or report after report at a loss scale "
        "that never comes down (a fixed --loss-scale): with fp16 the gradients keep overflowing "
        "(Inf/NaN), so optimizer steps are thrown away.",
        "Switch to --bf16, lower --lr, check for bad data; with fp16 drop a fixed --loss-scale (the "
        "dynamic scaler backs off by itself) or set --initial-loss-scale lower, and watch `loss scale` "
        "in the log.",
        severity="warning",
        role="context",
    ),
    FailureSignature(
        "gpu_xid_error",
        (
            r"NVRM: Xid",
            r"Xid \(PCI:[0-9a-fA-F:.]+\): \d+",
            r"GPU has fallen off the bus",
            r"uncorrectable ECC error",
            r"CUDA error: (an )?uncorrectable ECC",
            # cudaErrorNvlinkUncorrectable: "uncorrectable NVLink error detected during the execution"
            r"\buncorrectable NVLink error\b",
            # newer drivers split the message over lines without an Xid number (NVSentinel#155)
            r"\bfallen off the bus\b",
            # the NVIDIA device plugin's health check (k8s-device-plugin)
            r"XidCriticalError: Xid=\d+",
            # the driver cannot bring a GPU up at all (a dead or unseated board, dmesg), and a GPU's PCIe
            # link failing beyond recovery (the kernel's AER report naming the nvidia driver's device)
            r"\bRmInitAdapter failed\b",
            r"\bnvidia [0-9a-fA-F:.]+: AER: (?:can't recover|[Uu]ncorrected)",
            # CUDA's "contained" hardware error (cudaErrorContained): an NVLink access or an ECC fault
            # the GPU stopped before it spread
            r"Invalid access of peer GPU memory over nvlink or a hardware error",
            r"\bcudaErrorContained\b|\bCUDA_ERROR_CONTAINED\b",
            # nvidia-smi on a GPU the driver lost (Xid 79, off the bus): the PCI id and "Unknown Error"
            r"Unable to determine the device handle for (?:GPU)?\s*[0-9A-Fa-f:.]+: Unknown Error",
            # NVML's NVML_ERROR_GPU_IS_LOST, as the device plugin or DCGM pass it on
            r"\bGPU is lost\b",
            # DCGM's diagnostic on ECC: uncorrectable errors with row remappings pending (Xid 63/64)
            r"\bhas uncorrectable memory errors and row\b",
            # Azure's HPC GPU health check on ECC counters and row remapping
            r"Detected a (?:very high )?GPU (?:pending row remap|row remap [Ee]rror|(?:SRAM|DRAM) uncorrectable error)",
            # ROCm's runtime on AMD GPUs, its counterpart of an Xid: the GPU hung or faulted in hardware
            r"\bHW Exception by GPU node-\d+ .*reason ?: ?GPU Hang\b",
            # the driver's GSP firmware refusing work on a GPU until it is reset (dmesg: "NVRM:
            # nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]"), while
            # CUDA tells the process only that the device is "busy or unavailable"
            r"\[NV_ERR_RESET_REQUIRED\]",
        ),
        "The GPU driver reported an Xid error, or CUDA a hardware fault (ECC, a GPU off the bus, an "
        "NVLink access the GPU contained): the node's GPU is unhealthy, and the process on it crashes "
        "or hangs. Xid 13, 31 or 43 alone are as often the program's own illegal memory access.",
        "Cordon the node and drain it, replace it (HyperPod: let auto-resume replace the instance), "
        "and resume from the last checkpoint. With only Xid 13, 31 or 43, rerun on another node first: "
        "the same failure there is the code (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer), not the GPU.",
    ),
    FailureSignature(
        "gpu_assignment_invalid",
        (
            # NCCL's init check: two ranks of one communicator on the same GPU (a device index
            # hard-coded in the script, LOCAL_RANK not used, or two pods on one node that each see
            # every GPU because neither asked for nvidia.com/gpu)
            r"Duplicate GPU detected : rank \d+ and rank \d+ both on CUDA device",
            # TensorFlow asked for a GPU it was not given (a rank that hid all but its own GPU with
            # set_visible_devices, which TF then calls GPU:0, handed a tensor on CUDA device 1:
            # "InvalidArgumentError: GPU:1 unknown device.")
            r"\bInvalidArgumentError: GPU:\d+ unknown device\b",
            # ... XGBoost's NCCL communicator finding the same ("Check failed: n_uniques == world (1 vs. 4)
            # : Multiple processes within communication group running on same CUDA device is not
            # supported": Dask workers all given GPU 0), often wrapped before "same"
            r"\bMultiple processes within communication group running on\s+same CUDA device\b",
            # CUDA's cudaErrorInvalidDevice raised by torch: a rank asked for a GPU past the last one
            # it sees (torch.cuda.set_device(local_rank) with more processes than GPUs). Not NCCL's
            # own "Cuda failure 'invalid device ordinal'", which a driver too old for the NCCL build
            # also prints (NVIDIA/nccl#496). (The lookbehind keeps "error: ", which thousands of
            # healthy lines hold, out of the literal gate: tests/test_diagnose_corpus.py.)
            r"(?<=CUDA error: )invalid device ordinal",
            # ... and as torch built for ROCm says it (hipErrorInvalidDevice), for AMD GPUs
            r"(?<=HIP error: )invalid device ordinal",
            # ... and Ascend's runtime (CANN) refusing a device id past the last NPU, in its error
            # EE1001 ("Set device failed, invalid device, set device=8, valid device range is [0, 8)")
            # and its driver's wordings ("Invalid device ID 8. Set drv devId to 8. The valid device
            # range is [0, 7).", "Invalid drv devId, current drv devId=8, valid device range is [0, 8)")
            r"\b[Vv]alid device range is \[0, \d+\)",
            # torch 1.x's wording of the same error (THCudaCheck; "cuda runtime error (10) : invalid
            # device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:33")
            r"(?<=cuda runtime error \(10\) : )invalid device ordinal",
            r"(?<=error=10 : )invalid device ordinal",
            # ... and with CUDA 10.1 and later, which renumbered cudaErrorInvalidDevice to 101
            # ("THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=37 error=101 : ...")
            r"(?<=cuda runtime error \(101\) : )invalid device ordinal",
            r"(?<=error=101 : )invalid device ordinal",
            # glog's CHECK of a CUDA call (Caffe's CUDA_CHECK: "Check failed: error == cudaSuccess
            # (10 vs. 0)  invalid device ordinal", error 10 being cudaErrorInvalidDevice)
            r"(?<=\(10 vs\. 0\)  )invalid device ordinal",
            r"(?<=\(101 vs\. 0\)  )invalid device ordinal",
            # ... and OneFlow's check of the call itself ("Check failed: cudaSetDevice(dev_id) : invalid
            # device ordinal (101)": a machine given more device ids than it has GPUs)
            r"\bCheck failed: cudaSetDevice\(\w*\) : invalid device ordinal\b",
            # the CUDA driver API's name for it, as XLA (JAX) reports a device it was told to open
            # ("Failed call to cuDeviceGet: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal": a
            # process given local device ids past the one GPU its Slurm task sees)
            r"CUDA_ERROR_INVALID_DEVICE: invalid device ordinal",
            # the runtime API's name for it, as CuPy raises it ("CUDARuntimeError: cudaErrorInvalidDevice:
            # invalid device ordinal": a multi-node Horovod job picking its GPU by the global rank)
            r"\bcudaErrorInvalidDevice: invalid device ordinal",
            # PyTorch Lightning's device check ("MisconfigurationException: You requested GPUs: [0, 1]"
            # then " But your machine only has: [0]"): a Trainer asking for more GPUs than the process
            # sees (a Ray Tune trial given one GPU)
            r"\bMisconfigurationException: You requested (?:GPUs?|gpus?|devices?): \[[\d, ]*\]",
            # ... older Lightning's form of it, the message on its own lines after the exception's name
            # ("            But your machine only has: []", a machine where CUDA sees no GPU), and Keras's
            # multi_gpu_model ("To call `multi_gpu_model` with `gpus=8`, we expect the following devices
            # to be available: [...]. However this machine only has: ['/cpu:0', '/gpu:0']")
            r"\b(?:But your|However this) machine only has: \[",
            # a script's own check of the GPUs it was given ("ValueError: require 2 GPUs, but only 1 GPUs
            # available", "RuntimeError: Requested 8 GPUs, but only 4 are visible."), raised: the same
            # words in a warning go on with fewer GPUs
            r"(?:Error|Exception): .{0,60}\b(?:[Rr]equest(?:ed|s)?|[Rr]equires?) \d+ GPUs?, but only (?:found )?\d+\b",
            # torch's own check of a device index against the GPUs it counted ("device >= 0 && device <
            # num_gpus INTERNAL ASSERT FAILED ... device=7, num_gpus=..."): a process told to use a GPU
            # number past the ones it sees (a GRPO script's rollout device set to 7 on a smaller node)
            r"\bdevice >= 0 && device < num_gpus INTERNAL ASSERT FAILED",
            # TensorFlow's session config naming a GPU the process does not see ("'visible_device_list'
            # listed an invalid GPU id '6' but visible device count is 1"; "Device id" since TF 2): Horovod
            # pinning each rank to its local rank while CUDA_VISIBLE_DEVICES already left it one GPU
            r"'visible_device_list' listed an invalid (?:GPU|Device) id",
            # TensorFlow 1.x's placer: an op pinned to a GPU its task does not have ("Cannot assign a
            # device for operation 'x': Operation was explicitly assigned to /job:ps/task:0/device:GPU:1
            # but available devices are [...]", a parameter server on a node without GPUs); not its
            # "Could not satisfy explicit device specification ... no supported kernel for GPU devices",
            # an op that has no GPU kernel
            r"\bOperation was explicitly assigned to \S*GPU:\d+ but available devices are\b",
            # no GPU at all in the process: torch's lazy init with CUDA_VISIBLE_DEVICES empty or a
            # pod without its nvidia.com/gpu limit (benchmarks/gpu_faults.py), and CUDA's own
            # cudaErrorNoDevice (100) for a container without the NVIDIA runtime
            r"No CUDA GPUs are available",
            r"No HIP GPUs are available",  # ROCm's torch, the same check (HIP_VISIBLE_DEVICES)
            # ... JAX's, when its CUDA plugin is installed and the process sees no GPU ("Unable to
            # initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.")
            r"\bUnable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices\b",
            r"(?<=CUDA error: )no CUDA-capable device is detected",
            # ... in torch 1.x's THC wordings, under both numbers cudaErrorNoDevice has had (38, then
            # 100 from CUDA 10.1), and Caffe's glog CHECK of the same call
            r"(?<=cuda runtime error \(38\) : )no CUDA-capable device is detected",
            r"(?<=cuda runtime error \(100\) : )no CUDA-capable device is detected",
            r"(?<=error=38 : )no CUDA-capable device is detected",
            r"(?<=error=100 : )no CUDA-capable device is detected",
            r"(?<=\(38 vs\. 0\)  )no CUDA-capable device is detected",
            r"(?<=\(100 vs\. 0\)  )no CUDA-capable device is detected",
            # PaddlePaddle's check of a device number against the GPUs it counted (glog at error level:
            # "E0808 11:06:01.542 1538951 pybind.cc:1584] Invalid CUDAPlace(3), must inside [0, 2), because
            # GPU number on your machine is 2"; an enforce in older releases, and when a tensor is copied)
            r"\bInvalid CUDAPlace\(\d+\), (?:device id )?must inside \[0, \d+\)",
            # MindSpore's GPU runtime setting a device_id past the GPUs CUDA_VISIBLE_DEVICES leaves
            # ("SetDevice for id:7 failed, ret[101], invalid device ordinal. Please make sure that the
            # 'device_id' set in context is in the range:[0, total number of GPU)")
            r"\bSetDevice for id:\d+ failed, ret\[\d+\], invalid device ordinal",
            # SageMaker model parallel (smp) with processes_per_host above the instance's GPUs
            r"node-local MPI processes \d+ ?(?=cannot be larger than the device count)",
            # the kit's trainer says so before it asks (train/device.py)
            r"workshop train: error: \d+ processes on this node, but it shows \d+ GPU",
        ),
        "A rank has no GPU of its own: either it asked for a GPU number this node does not show "
        "(more processes than GPUs, or CUDA_VISIBLE_DEVICES hiding some), or two ranks of the job "
        "took the same GPU.",
        "Start one process per GPU (--nproc-per-node = the pod's nvidia.com/gpu limit), select the GPU "
        "with LOCAL_RANK (torch.cuda.set_device(local_rank)) rather than a fixed index, leave "
        "CUDA_VISIBLE_DEVICES unset in the pod, and give every pod its nvidia.com/gpu limit so two "
        "pods on one node do not share GPUs.",
    ),
    FailureSignature(
        "fabric_manager_not_running",
        (
            r"Cuda failure 802 'system not yet initialized'",
            r"CUDA error: system not yet initialized",
            r"cudaErrorSystemNotReady",
            # the same error 802 as CUDA samples, nccl-tests and old torch print it
            r"system not yet initialized",
            r"\bcode=802\b|\berror \(802\)|[Ee]rror 802\b",
            # ... and as a program probing the driver itself reports cuInit's result (ollama's GPU
            # discovery: "cuInit err: 802", "cuda driver library init failure: 802")
            r"\bcuInit err: 802\b|\binit failure: 802\b",
            # Fabric Manager's own log (journalctl -u nvidia-fabricmanager) when it cannot set the
            # NVSwitches up, e.g. started before the driver was ready (pytorch/ci-infra#552)
            r"fabric manager error handler is called",
            r"failed to configure all the available GPUs or NVSwitches",
            r"not all local fabric manager instances finished their configuration",
            # the start script printing its usage instead of starting the daemon (a wrong argument)
            r"Usage: \S*nvidia-fabricmanager-start\.sh",
            # the start script's precheck on NVLink 5 systems (B200/GB200: FM needs ib_umad for NVLSM)
            r"fabric manager cannot be started",
            # a node health agent's check (leptonai/gpud) on an NVSwitch system
            r"fabric manager found but not active",
            # the service itself failing to start (its driver interface not the installed driver's)
            r"nvidia-fabricmanager\.service: (?:Control|Main) process exited, code=exited, status=[1-9]",
            r"fabric manager NVIDIA GPU driver interface version \S+ don'?t match",
        ),
        "CUDA reports 'system not yet initialized' (error 802): on NVSwitch nodes (p4d, p5, DGX/HGX) "
        "the NVIDIA Fabric Manager is not running or does not match the driver, so no GPU can join a "
        "multi-GPU job.",
        "Start (or fix) nvidia-fabricmanager on the node with the same version as the driver "
        "(`systemctl status nvidia-fabricmanager`); on EKS use the GPU AMI or the GPU operator, which "
        "run it; cordon the node until `nvidia-smi -q | grep -i fabric` shows it Completed.",
    ),
    FailureSignature(
        "training_hang",
        # derived from iteration-line timestamps (HANG_INTERVAL_FACTOR, HANG_MIN_SECONDS), stall
        # reports and stack dumps; and the kernel's hung-task detector naming a training process
        # (uninterruptible sleep for minutes: a write to a file system that froze)
        (
            r"INFO: task (?:python\S*|pt_\w+|torchrun):\d+ blocked for more than \d+ seconds",
            # NeMo-RL's own stall detector (async GRPO): neither a rollout nor a train step for N seconds
            r"\brollout stall -- no rollout committed and no train step completed\b",
            # Transformer Engine's Userbuffers (communication overlapped with GEMMs) giving up on a
            # peer's flag after UB_TIMEOUT ("[userbuffers.cu:userbuffers_fp16_sum_inplace_gpu_rr_rs_oop:
            # 797] [6] Reduce-scatter: SM 18 [2]: expecting 1 got 0"): a GPU of the TP group stopped
            r"userbuffers\.cu:\w+:\d+\] \[\d+\] [\w -]{1,40}: ?SM \d+ \[\d+\]: ?expecting \d+ got \d+",
        ),
        "The run stopped logging iterations while the log (or the clock) moved on: some rank is stuck "
        "(a collective waiting on a dead or stopped peer, a deadlock in data loading, a stuck file "
        "system) and the others wait for it.",
        "Dump the stacks of every rank (`py-spy dump --pid <pid>` in each pod) to find the rank that "
        "is not in the collective; set NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so a "
        "collective timeout ends the run instead of hanging, then resume from the last checkpoint.",
        role="symptom",
    ),
    # --- Kubernetes pod events --------------------------------------------------------------------
    FailureSignature(
        "image_pull_error",
        (
            r"ErrImagePull",
            r"ImagePullBackOff",
            r"Failed to pull image",
            # containerd's own words, as a pod's creation error quotes them (an unreachable registry,
            # a missing tag, no credentials: the reason follows on the same line)
            r"failed to pull and unpack image",
            # `kubectl logs` of a pod whose container never started
            r"waiting to start: (?:trying and failing to pull image|image can't be pulled)",
            r"pull access denied",
            r"manifest unknown",
            r"Back-off pulling image",
            r"no basic auth credentials",
            # Slurm's pyxis/enroot: the --container-image could not be imported (pulled); the enroot log
            # lines after it say why (a name taken as a registry image, credentials, a missing tag)
            r"pyxis: failed to import docker image",
            r"unauthorized: authentication required",
            r"(?:pull|manifests?/)\S*.*\b401 Unauthorized",
            # enroot (as pyxis prints its log): the registry has no manifest for that name or tag
            r"\[ERROR\] URL \S+/v2/\S+/manifests/\S+ returned error code: 404\b",
            # SageMaker's training job status when its instance could not pull the image (a wrong or
            # hand-edited image URI, another region's registry, no permission to the repository)
            r"Cannot pull algorithm container\. Either the image does not exist or its permissions are incorrect",
        ),
        "The node cannot pull the training image: wrong name/tag, or no permission to the registry.",
        "Check the image URI and tag exist (`aws ecr describe-images`), and that the node role (or an "
        "imagePullSecret) may read the repository.",
        # enroot failing on the node itself, not on the image: its runtime or cache folder not
        # writable, or the squashfs it builds from the layers filling /run/pyxis or its cache (both
        # as quoted in pyxis' printout of enroot's log, whose ENOSPC line is disk_full's), and a job
        # its operator reports succeeded (the pull was retried and worked)
        unless=(
            r"pyxis:\s+mkdir: cannot create directory",
            r"pyxis:\s.*[Nn]o space left on device",
            *KUBEFLOW_JOB_SUCCEEDED,
        ),
    ),
    FailureSignature(
        "volume_mount_failed",
        (
            # kubelet events of a pod stuck in ContainerCreating (FailedMount), the scheduler's
            # FailedScheduling for a claim with no volume yet, and a CSI node plugin's own mount error
            r"\bFailedMount\b",
            r"MountVolume\.\w+ failed for volume",
            r"Unable to (?:attach or )?mount volumes",
            r"AttachVolume\.Attach failed for volume",
            r"pod has unbound immediate PersistentVolumeClaims",
            # a ReadWriteOnce volume (EBS, Azure Disk) already attached to another node, where another
            # worker of the job (or the last run's pod) holds it: this pod cannot start beside it
            r"\bMulti-Attach error for volume\b",
            r"/csi\.v1\.Node/Node(?:Stage|Publish)Volume, GRPC error",
            r"\bmount\.(?:lustre|nfs4?|efs): .*(?:failed|denied|timed out)",
            # mount.lustre's hint when the node's kernel has no Lustre client module (an OS image
            # without it, such as Bottlerocket's 6.1-kernel variants): the mount fails "No such device"
            r"^\s*Are the lustre modules loaded\?",
            # the Lustre client in the node's kernel refusing the mount (dmesg: "llite: Unable to mount")
            r"lustre_fill_super\(\)\) (?:llite: )?Unable to mount\b",
            r"Could not mount \"[^\"]+\" at \"/var/lib/kubelet/pods/",
            # a container's bind mount refused on a Slurm node (pyxis --container-mounts)
            r"enroot-mount: failed to mount: ",
            # pyxis refusing a --container-mounts entry before the container starts
            r"pyxis: could not add mount entry: ",
            # Apptainer/Singularity failing a bind mount (--bind, or the site's default binds) as it
            # creates the container: a source missing on the node, or a destination missing in a
            # --writable image. (Not its image mount, "while mounting image", which is the image's.)
            r"container creation failed: mount hook function failure: ",
            # dynamic provisioning of the claim's volume failed (a StorageClass parameter, a quota)
            r"\bProvisioningFailed\b",
            r"failed to provision volume with StorageClass",
            # a FlexVolume or CSI driver's own log of the mount into the pod's volume folder (blobfuse)
            r"Failed to mount (?:device )?\S* at /var/lib/kubelet/pods/",
            # Azure ML compute mounting a datastore with blobfuse before the job starts
            r"\bBFSMountError\b|\bUnable to mount blob ?fuse file system\b",
        ),
        "The pod's volume (the FSx for Lustre, EFS, Azure Lustre or NFS claim that holds the data and "
        "checkpoints) could not be bound or mounted on the node, so the container never started.",
        "`kubectl describe pvc CLAIM` must say Bound (a new FSx file system takes minutes to create); "
        "check that the CSI driver's node pods run on the GPU nodes, that the file system's security "
        "group lets the nodes in (TCP 988 and 1018-1023 for FSx for Lustre, 2049 for NFS/EFS), and the "
        "volume's DNS and mount names. A claim that pods on several nodes share must be ReadWriteMany "
        '(FSx for Lustre, EFS, Azure Files/Lustre), not a ReadWriteOnce block volume ("Multi-Attach error").',
        # a mount that failed once while the CSI driver was still starting, then worked: the container ran
        unless=(r"\bStarted container\b", *KUBEFLOW_JOB_SUCCEEDED),
    ),
    FailureSignature(
        "pod_pending_insufficient_resources",
        (
            r"Insufficient (nvidia\.com/gpu|vpc\.amazonaws\.com/efa|rdma/\w+|memory|cpu|hugepages)",
            r"(?<!\d)\d+/\d+ nodes are available",
            r"FailedScheduling",
            # GKE's and older schedulers' event wording
            r"PodUnschedulable",
            r"Cannot schedule pods",
            r"Insufficient nvidia\b",
            # Kueue holding a job back: its ClusterQueue has no (unused) quota for what the pods request
            r"couldn'?'?t assign flavors to pod set",  # also as quoted in YAML ('couldn''t')
            # the cluster autoscaler (Kueue's ProvisioningRequest) unable to add nodes
            r"max cluster limit reached, nodepools out of resources",
            r"insufficient (?:unused )?quota for \S+ in flavor",
            # the cloud has no capacity left for the instance type the node group (or a managed
            # service's job) asks for: EC2's error as Karpenter, an autoscaler or SageMaker pass it on
            r"\bInsufficientInstanceCapacity\b",
            r"failed for insufficient capacity|Unable to provision requested ML compute capacity",
            r"failed to acquire min nodes",
            # dstack's offers that all failed for want of capacity ("p5.48xlarge in aws/us-west-1:
            # NoCapacityError")
            r"\bNoCapacityError\b",
            # Ray's autoscaler: no node type of the cluster can hold what a task, an actor or a
            # placement group asks for (8 GPUs packed on one node of a cluster whose nodes have 1),
            # so the training workers wait for ever
            r"No available node types can fulfill resource request",
            # Azure's allocator with no capacity left for the VM size in the region or zone (AKS node
            # pools, aks-engine, Azure ML compute): "Allocation failed. We do not have sufficient
            # capacity for the requested VM size in this region."
            r"\bWe do not have sufficient capacity for the requested VM size\b",
            # Volcano's (and kube-batch's) gang scheduling: the PodGroup cannot get minAvailable pods
            # placed ("2/1 tasks in gang unschedulable: pod group is not ready", reason NotEnoughResources)
            r"\btasks in gang unschedulable\b",
            r"\breason: NotEnoughResources\b",
            # SkyPilot finding no capacity for the requested GPUs in any region or zone
            r"\bResourcesUnavailableError: Failed to provision all possible launchable resources\b",
            # the account's quota for the GPU instance type is used up (SageMaker's ResourceLimitExceeded
            # "account-level service limit for training-job/ml.p4d.24xlarge", EC2's vCPU limit,
            # Vertex AI's and Compute Engine's GPU quotas)
            r"\bResourceLimitExceeded\b.*\bservice limit\b",
            r"\bVcpuLimitExceeded\b",
            r"\bquota metrics exceed quota limits\b",
            r"\bQuota '\w*GPUS?' exceeded\b",
            # the AI Platform / Vertex AI training API's quota check, per accelerator type ("The
            # request for 2 K80 accelerators exceeds the allowed maximum of 0 A100, 0 K80, ...")
            r"\bThe request for \d+ [\w-]+ accelerators exceeds the allowed maximum of\b",
            # the kubelet refusing a pod the scheduler placed (a node whose GPUs another pod, or a
            # process outside Kubernetes, already holds): the pod fails with reason "OutOf<resource>"
            # ("OutOfnvidia.com/gpu", 2017's "OutOfalpha.kubernetes.io/nvidia-gpu"), its event says
            # "Node didn't have enough resource", the device plugin's admission error how many it
            # found free. (Not gated on "Warning", the event's type: every UserWarning has that word.)
            r"^\s*Reason:\s+OutOf(?:[a-z][\w.-]*/)?[a-z][\w.-]*\b",
            r"\bNode didn't have enough resource: \S+, requested: \d+",
            # (from "devices unavailable" on: "requested number of" would join the gate "umber of",
            # which every Megatron iteration line holds, and run this table on each of them)
            r"\bdevices unavailable for \S+\. Requested: \d+, Available: \d+",
            # the namespace's ResourceQuota (the cloud quotas' counterpart inside the cluster) already
            # spent: the job controller cannot even create the pod ("Error creating: pods
            # \"train-worker-0\" is forbidden: exceeded quota: gpu-quota, requested: ...")
            r"\bis forbidden: exceeded quota: \S+, requested: ",
            # Slurm refusing a request no node of the partition can ever hold (8 GPUs where nodes
            # have 4, more memory or CPUs than a node has), at submission or at step creation
            r"\b(?:srun|sbatch|salloc): error: .*\bRequested node configuration is not available\b",
        ),
        "The scheduler cannot place a pod: no node has the GPUs / EFA interfaces / memory it requests free "
        "(or the cloud has no capacity left for the GPU instance type the node group asks for).",
        "Request what the instance type has (e.g. p4d.24xlarge: 8 GPUs, 4 EFA), check nodes with "
        "`kubectl describe nodes`, scale the node group, or delete finished jobs holding GPUs; for "
        "InsufficientInstanceCapacity use a capacity reservation or another zone; for a quota "
        "(ResourceLimitExceeded, a GPU quota exceeded) ask the cloud for an increase.",
        unless=(r"Successfully assigned \S+ to", *KUBEFLOW_JOB_SUCCEEDED),
    ),
    # --- the kit's trainer: any other refusal ------------------------------------------------------
    FailureSignature(
        "train_flags_invalid",
        (
            # any other refusal of the kit's trainer (last in the table, so that a refusal naming a
            # known cause, such as a changed schedule on resume, gets that cause's label): one line
            # with the cause and the fix, printed by
            # `workshop train` before torchrun starts or by each rank ("[rank N] workshop train: error:")
            r"workshop train: error: ",
            # other trainers' refusals that ask for a flag by name ("AssertionError: Provide the
            # argument --vocab-extra-ids 100 to the script", Megatron-DeepSpeed's T5 dataset), or
            # for a config field in backquotes ("ValueError: Please provide `model_name_or_path`.",
            # "ValueError: Please enable `predict_with_generate` to save model predictions.",
            # LLaMA-Factory's argument dataclasses)
            r"(?:Error|Exception): (?:[Pp]lease )?"
            r"(?:[Pp]rovide|[Ss]pecify|[Pp]ass|[Ss]et|[Aa]dd|[Ee]nable|[Dd]isable) "
            r"(?:the )?(?:argument |flag |option )?(?:--[a-z][\w-]+|`[a-z]\w*`)",
            # transformers' HfArgumentParser given flags no dataclass declares (a misspelt or made-up
            # --flag in the launch command)
            r"Some specified arguments are not used by the HfArgumentParser: ",
            # ... and its Trainer given a streamed (IterableDataset) train set without --max_steps: with
            # no length, the number of steps, and so the LR schedule, must come from the flag
            # (transformers 4: "The train_dataset does not implement __len__, max_steps has to be
            # specified."; 5 adds "so the number of training steps cannot be inferred;"; the inner loop
            # says "args.max_steps must be set to a positive value if dataloader does not have a length")
            r"\bdoes not implement __len__,(?: so the number of training steps cannot be inferred;)? "
            r"max_steps has to be specified\b",
            r"\bargs\.max_steps must be set to a positive value if dataloader does not have a length\b",
            # ... or that name the option whose value they refuse ("ValueError: Invalid
            # reshard_after_forward_policy: invalid.", torchtitan)
            r"ValueError: Invalid (?:value for )?[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+:? ",
            # ... or that refuse two options together ("ValueError: FlexAttention is not compatible with
            # selective AC yet", torchtitan)
            # (not JAX's "ValueError: One of with_sharding_constraint arguments is incompatible with its
            # sharding annotation ...": an array whose rank its PartitionSpec does not fit, a code bug)
            r"(?:(?:Value|NotImplemented)Error|MisconfigurationException): [\w .`'()=-]{1,80} (?:is|are) (?:not (?:yet )?(?:compatible|supported)|incompatible) with (?!its sharding annotation)",
            # Lightning's Slurm environment refusing a Trainer that disagrees with the allocation
            # ("You set `devices=2` in Lightning, but the number of tasks per node configured in SLURM
            # `--ntasks-per-node=1` does not match. HINT: Set `devices=1`.", the same for num_nodes and
            # --nodes) or a batch script that asked for --ntasks instead of --ntasks-per-node
            r"\bYou set `[\w-]+=\d+` in (?:Lightning, but the \w+(?: \w+){0,4} configured in SLURM\b|your SLURM bash script, but this variable is not supported)",
            # ... or that allow one option only beside another ("AssertionError: pretrained image towers
            # currently only supported for timm models", open_clip given --pretrained-image with a
            # non-timm model; "full recompute is only supported with full iteration CUDA graph")
            r"(?:Assertion|Value|NotImplemented)Error: [\w .`'()=-]{1,80} (?:is |are )?(?:currently )?only supported (?:for|with) ",
            # WebDataset refusing a multi-node pipeline with no rule for splitting its shards between
            # the nodes (FSDP/DDP: "you need to add an explicit nodesplitter to your input pipeline
            # for multi-node training"), on purpose, as its maintainer says
            r"\byou need to add an explicit nodesplitter to your input pipeline\b",
            # Megatron's dataset builder refusing a data cache it cannot write ("There was an error
            # trying to create the data cache directory (...) ... set with the --data-cache-path
            # argument"): the folder next to read-only data, or one the job's user may not write
            r"\bThere was an error trying to create the data cache directory\b",
            # kohya's sd-scripts finding no image under --train_data_dir ("No data found. Please
            # verify arguments (train_data_dir must be the parent of folders with images)")
            r"\bNo data found\. Please (?:verify|check) (?:the |your )?arguments\b",
            # verl's weight sync refusing a tensor larger than its bucket ("AssertionError: Weight
            # model.embed_tokens.weight(torch.Size([151936, 4096]), torch.float32) is too large to fit in
            # the bucket. Please increase rollout.update_weights_bucket_megabytes(2048 MB)."): a config
            # value too small for the model, raised before the first update
            r"\bis too large to fit in the bucket\.(?:\s*Please increase [\w.]*update_weights_bucket_megabytes\b|\s*$)",
            # OmegaConf's structured config (NeMo, AReaL, Hydra recipes) refusing a key its schema lacks
            r"\bomegaconf\.errors\.ConfigKeyError: Key '[^']+' not in '",
            # ... or an interpolation ("${dataloader.read_group_size}") naming a key the config lacks
            r"\bomegaconf\.errors\.InterpolationKeyError: Interpolation key '[^']+' not found",
            # OLMo's and OLMo-core's own exception for a refused config ("OLMoConfigurationError: DDP
            # does not work with init_device set to anything other than `cuda`."); not its refusal to
            # overwrite a checkpoint already saved, which reports the save folder's state (and was an
            # OLMo bug that dropped --save_overwrite in allenai/OLMo#827), not a setting
            r"\bOLMoConfigurationError: (?!Checkpoint for step \d+ already exists)",
            # Lightning's Trainer refusing its strategy or accelerator ("You selected an invalid
            # strategy name: `strategy=None`. It must be either a string or an instance of ...")
            r"\bYou selected an invalid (?:strategy|accelerator) name: `",
            # ... Hydra finding no config group or file the recipe names, and a value outside a
            # config field's Enum ("'mxfp8_cublas' is not a valid MXFP8TrainingRecipe"; transformers'
            # ExplicitEnum leaves the value unquoted and lists the choices: "fsdp2 is not a valid
            # FSDPOption, please select one of [...]")
            r"\bhydra\.errors\.MissingConfigException: ",
            # Hydra's own command-line override parser refusing an override (NeMo's and other
            # recipes' key=value arguments): "Ambiguous value for argument
            # 'model.data.splits_string=980,10,10'" (quote it or use a list) and "Could not override
            # 'trainer.foo'." (a key the config lacks: add it with +trainer.foo=...)
            r"^Ambiguous value for argument '[\w.+~@/-]+=",
            r"^Could not override '[\w.+~@/-]+'\.",
            # ... and its override grammar refusing an argument that is no key=value at all (a config
            # file passed bare, "nequip-train config.yaml", where Hydra wants -cn config.yaml):
            # "hydra.errors.OverrideParseException: Error parsing override 'config.yaml'"
            r"\bOverrideParseException: Error parsing override '",
            r"ValueError: '[^']{1,80}' is not a valid [A-Z]\w+$",
            r"ValueError: \S{1,80} is not a valid [A-Z]\w+, please select one of \[",
            # argparse's own refusal, printed as "<prog>: error: ..." (any trainer's or launcher's
            # parser: Megatron's, torchrun's, a fork's script with flags Megatron no longer has),
            # indented too (a launcher or a commit message quoting the usage error), or after a
            # timestamp (`kubectl logs --timestamps`, "2025-11-21T23:05:13.867590928Z launch_server.py:
            # error: argument --attention-backend: invalid choice: 'flashattn'")
            r"^\s*(?:\d{4}-\d\d-\d\dT[\d:.]+Z?\s+)?\S+: error: (?:unrecognized arguments: |argument --?[\w-]+|the following arguments are required: )",
            # ... also from a parser given its description as its program name, which has spaces
            # ("BERT pretraining.: error: unrecognized arguments: --log_dir log"): only with a flag
            # after argparse's own words, as a sentence that quotes "error: argument" is no refusal
            r"^\s*\S+(?: \S+){1,3}: error: unrecognized arguments: --?[\w-]+",
            # ... click's and optparse's ("Error: No such option: --qm9dataset_remove_h (Possible
            # options: ...)", "train.py: error: no such option: --lr")
            r"\b[Nn]o such option: --?[\w-]+",
            # megatron-core's TransformerConfig refusing a CUDA-graph flag combination ("Transformer
            # engine's RNG tracker is required for cudagraphs", "full recompute is only supported with
            # full iteration CUDA graph")
            r"AssertionError: .*\b(?:is required for|is only supported with|is not supported with|requires)\b.*\b(?:cuda ?graphs?|CUDA graphs?)\b",
            # a required input left out, or a config file refused by its own validation
            r"(?:Assertion|Value)Error: [\w ]{1,40} (?:must|should) be (?:specified|provided|given|set)\b",
            r"(?:Assertion|Value)Error: (?:You )?[Mm]ust (?:provide|specify|pass|give) an? [\w -]{1,60}\b(?:file|path|flag|argument|option)\b",
            # torch.distributed's env:// rendezvous run without a launcher (python script.py instead of
            # torchrun): the variables torchrun or the PyTorchJob would set are missing
            r"\benvironment variable (?:MASTER_ADDR|MASTER_PORT|RANK|WORLD_SIZE) expected, but not set\b",
            r"(?:Assertion|Value)Error: .*\b(?:in|of) (?:the|your) config(?:'s|uration)?\b",
            # a YAML config that does not parse (PyYAML's and ruamel's errors name the file and line)
            r"\byaml\.(?:scanner\.ScannerError|parser\.ParserError|constructor\.DuplicateKeyError): ",
            # ... or a YAML config the flag names that is not there (trl's YamlConfigParser opening
            # --config, a recipe's path relative to another directory)
            r"No such file or directory: '[^']*\.ya?ml'",
            # ... a JSON or TOML one whose name says it holds settings, not data (AlgoPerf's
            # --tuning_search_space, a --deepspeed ds_config.json, a model folder's config.json)
            r"No such file or directory: '(?:[^']*/)?[^'/]*(?:"
            + _SETTINGS_FILE_WORDS
            + r")[^'/]*\.(?:json|toml)'",
            # ... and config loaders' own words for it: detectron2's merge_from_file ("AssertionError:
            # Config file './configs/x.yaml' does not exist!"), mmengine's Config.fromfile
            # ('FileNotFoundError: file "configs/x.py" does not exist')
            r"(?:Error|Exception): [Cc]onfig(?:uration)? file '[^']+' does not exist\b",
            r'FileNotFoundError: file "[^"]+\.(?:py|ya?ml)" does not exist\b',
            # a model folder the flag names that is not a Hugging Face model folder: transformers'
            # "OSError: ./models/x does not appear to have a file named config.json" (a wrong path or
            # an unfinished download), and huggingface_hub taking a local path that does not exist
            # for a Hub repo id ("Repo id must be in the form 'repo_name' or 'namespace/repo_name':
            # '/kaggle/input/...'")
            r"\bOSError: \S+ does not appear to have a file named \S",
            r"\bRepo id must be in the form 'repo_name' or 'namespace/repo_name': '(?:/|\.{1,2}/|~/)",
            # OmegaConf (NeMo, OLMo, Hydra configs) refusing a key or an interpolation: its errors name
            # the key on a "full_key:" line of their own
            r"\braised while resolving interpolation: ",
            r"^\s*full_key: \S",
            # megatron-core's LanguageModule finding Transformer Engine's attention switches exported
            # with values that contradict --attention-backend (a stale `export NVTE_FUSED_ATTN=0`):
            # its assertion names the variable and the flag (the kit's trainer refuses the same
            # earlier, in its own words: train/model.py)
            # (up to "for attention": a wrapped quote breaks the line before "backend type")
            r"\bNVTE_(?:FLASH|FUSED|UNFUSED)_ATTN set to \S+, but expected \d+ for attention\b",
            # Accelerate's state set-up on RTX 3090/40-series under torchrun (no P2P or IB on those
            # cards): it refuses until NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 are set ("... doesn't
            # support faster communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE="1"`")
            r"\bdoesn't support faster communication broadband via P2P or IB\b",
            # Megatron-Energon opening a webdataset folder that `energon prepare` never indexed ("Path
            # ... does not contain a .nv-meta/.info.yaml file. Did you forget to prepare the dataset?")
            r"\bdoes not contain a \.nv-meta/\.info\.yaml file\b",
            # Megatron-LM's model builder with --transformer-impl transformer_engine but without
            # --attention-softmax-in-fp32 (older releases did not set it for you)
            r"\bTransformerEngine only supports softmax compute in FP32\b",
            # a trainer refusing packing or padding-free batches for the chosen chat template
            # (ms-swift: "ValueError: Template `gemma4` does not support padding free or packing.")
            r"\bdoes not support padding[ _-]free\b",
            # tyro's refusal of options it does not know (torchtitan's and others' dataclass CLIs)
            r"\bUnrecognized options: \S",
            # a tokenizer's vocabulary file that is not where the flag says (BertTokenizer's wording)
            r"Can't find a vocabulary file at path '",
            # torchrun refusing its own --nproc-per-node (Slurm's compressed SLURM_TASKS_PER_NODE,
            # "4(x2)", passed on as it is: a number, or gpu/cpu/auto, is what it takes)
            r"ValueError: Unsupported nproc_per_node value: ",
            # a check that names the environment variable a chosen option needs (Megatron's
            # validate_args: "Using async gradient all reduce requires setting the environment
            # variable CUDA_DEVICE_MAX_CONNECTIONS to 1")
            r"(?:Error|Exception): "
            + _IN_ONE_MESSAGE
            + r"\brequires? setting the environment variable [A-Z][A-Z0-9_]+ to\b",
            # OneFlow's OFRecord reader given more devices than data parts (each device reads parts
            # of its own; the scripts' --data_part_num flag): "Check failed: parallel_num_ <=
            # data_part_num_ (2 vs. 1)"
            # (the flag's name is the gate: "parallel" is on every healthy run's lines)
            r"(?<=Check failed: parallel_num_ <= )data_part_num_ ",
        ),
        "The trainer refused its flags or inputs before training; the line says which flag or file and "
        "how to fix it.",
        "Do what the line says and start again; `python -m workshop_lib.train --help` lists the "
        "supported flags.",
    ),
)

FAILURES_BY_LABEL: dict[str, FailureSignature] = {f.label: f for f in FAILURES}

# The labels of ``workshop monitor diagnose`` in docs/cli.md; FAILURES holds these and a few more.
CONTRACT_LABELS: tuple[str, ...] = (
    "nccl_socket_fallback", "efa_plugin_missing", "nccl_timeout", "cuda_oom", "batch_size_not_divisible",
    "rendezvous_timeout", "socket_ifname_bad", "nan_loss", "skipped_iterations", "dataset_too_small",
    "checkpoint_mismatch", "triton_cache_hang", "shm_too_small", "nvls_peer_access", "gpu_xid_error",
    "efa_provider_unavailable", "parallelism_config_invalid", "master_addr_unresolved",
    "triton_cache_shared_fs", "dataset_index_corrupt", "image_pull_error",
    "pod_pending_insufficient_resources",
)  # fmt: skip
