"""The untrusted side of the trust wall: the code that runs in the worker process beside the candidate.

The confinement (``confine``, run as a script, with its layers ``isolation`` and ``landlock``) is
applied before anything else in the process, with the audit hook (``audit``); then the worker's loop
(``main``) imports the candidate and answers the judge's requests under the run-time policy
(``policy``), recording Triton launches (``triton_launches``). Nothing here decides a verdict: the
judge checks what comes back, and treats every reply as possibly forged.
"""
