"""The chat messages of one training example, as the model would see them at inference.

- the system message and the task message the episode's model was sent (taken from the stored
  turn, so hardware context and wording match the run; rebuilt from ``warpgym.prompts`` only
  when a record lacks them);
- a user message with the wrong kernel and the judge's verdict, worded by the prompts' own
  feedback template;
- one assistant message, the only trained one: the explanation, then the fixed kernel in one
  ```python block (the form the agents' extractor reads).
"""

from __future__ import annotations

from .pairs import Attempt, Pair

ATTEMPT_INTRO = "Your previous candidate:"


def task_info(task_id: str) -> tuple[str, str, str]:
    """(language, entrypoint, statement) of a task; placeholders if it is no longer registered."""
    try:
        from warpgym.tasks import get_task
        from warpgym.tasks.importers import use_configured

        use_configured()
        task = get_task(task_id)
        return task.language, task.entrypoint, task.statement()
    except Exception:  # noqa: BLE001 - a run from an older task list still yields data
        return "triton", "", ""


def prompt_messages(attempt: Attempt) -> list[dict[str, str]]:
    """The system and task messages of the attempt's episode, as sent; rebuilt if the record lacks them."""
    got = attempt.messages
    if len(got) == 2 and got[0].get("role") == "system" and got[1].get("role") == "user":
        return [{"role": m["role"], "content": str(m["content"])} for m in got]
    from warpgym.prompts import system_prompt, task_prompt

    language, entrypoint, statement = task_info(attempt.task)
    return [
        {
            "role": "system",
            "content": system_prompt(
                language=language, target=attempt.target, entrypoint=entrypoint, context=attempt.context
            ),
        },
        {
            "role": "user",
            "content": task_prompt(
                statement=statement, target=attempt.target, entrypoint=entrypoint, language=language
            ),
        },
    ]


def attempt_message(attempt: Attempt) -> str:
    """The wrong kernel, then the judge's verdict in the feedback template the loops use."""
    from warpgym.prompts import feedback_prompt

    language = task_info(attempt.task)[0]
    max_turns = max(attempt.max_turns, attempt.turn + 1)  # a pair always has a turn left for its fix
    verdict = feedback_prompt(
        turn=attempt.turn, max_turns=max_turns, feedback=attempt.feedback, language=language
    )
    return f"{ATTEMPT_INTRO}\n```python\n{(attempt.candidate or '').rstrip()}\n```\n\n{verdict.strip()}\n"


def answer_message(explanation: str, fixed: str) -> str:
    return f"{explanation.strip()}\n\n```python\n{fixed.rstrip()}\n```\n"


def example_messages(pair: Pair, explanation: str, *, join_user: bool = False) -> list[dict[str, str]]:
    system, task = prompt_messages(pair.wrong)
    attempt = attempt_message(pair.wrong)
    if join_user:
        users = [{"role": "user", "content": task["content"].rstrip() + "\n\n" + attempt}]
    else:
        users = [task, {"role": "user", "content": attempt}]
    answer = {"role": "assistant", "content": answer_message(explanation, pair.fixed.candidate or "")}
    return [system, *users, answer]
