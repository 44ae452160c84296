#!/usr/bin/env python3
"""A real Agent SDK client (Python claude-agent-sdk), as the real-client tests
run it. Prints one JSON line per turn: {"turn", "session_id", "result",
"is_error", "t_start", "t_result", "t_done"} (times in ms since the epoch).

usage: sdk_client.py MODE --cli PATH --turns N [--prompt 'message {k}']
  replay   one query() per turn, the whole conversation replayed as
           "Human: u1\\n\\nAssistant: a1\\n\\nHuman: u2" (a1: the last result)
  eager    as replay, but turn k+1 starts the instant turn k's result arrives,
           while turn k's CLI is still running (its query drained by a task)
  session  one ClaudeSDKClient: one CLI process for every turn; also prints
           every message it received ({"message": …}) for byte comparisons
  router   as session, but each message is the whole transcript so far, as a
           router renders it: "[System: be brief]\n\nu1\n\n[Assistant: a1]\n\nu2"
           (a1: the last result; --edit-replies: each with "." added;
           --labels human: "Human: u1\n\nAssistant: a1\n\nHuman: u2";
           --labels bare: as bracketed, without the "[System: …]" line)
  info     one ClaudeSDKClient, one turn; first prints what the answer to
           `initialize` said ({"info": {"output_style", "current_permission_mode"}})
  tools    as replay, with a permission callback (can_use_tool, allows) and a
           PreToolUse hook; each turn line lists the calls they got ("callbacks")
--settings PATH is passed on as ClaudeAgentOptions(settings=PATH).
--messages: replay, eager and tools also print every message ({"message": …}).
"""
import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time

from claude_agent_sdk import (ClaudeAgentOptions, ClaudeSDKClient, HookMatcher,
                              PermissionResultAllow, ResultMessage, query)

# What the permission callback and the hook were asked, in order (tools mode).
CALLS: list = []


async def can_use_tool(name, tool_input, context):
    CALLS.append({"permission": name, "input": tool_input})
    return PermissionResultAllow()


async def pre_tool_use(hook_input, tool_use_id, context):
    CALLS.append({"hook": hook_input.get("hook_event_name"), "tool": hook_input.get("tool_name"),
                  "input": hook_input.get("tool_input")})
    return {}


def now() -> float:
    return round(time.time() * 1000, 1)


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def transcript(users: list, replies: list) -> str:
    parts = []
    for i, u in enumerate(users):
        parts.append(f"Human: {u}")
        if i < len(replies):
            parts.append(f"Assistant: {replies[i]}")
    return "\n\n".join(parts)


def turn_line(k: int, r: ResultMessage, t_start: float, t_result: float, t_done: float) -> dict:
    line = {"turn": k, "session_id": r.session_id, "result": r.result or "", "is_error": r.is_error,
            "t_start": t_start, "t_result": t_result, "t_done": t_done}
    if CALLS:
        line["callbacks"] = CALLS.copy()
        CALLS.clear()
    return line


async def replay(a, options) -> int:
    users, replies, tasks = [], [], []
    for k in range(1, a.turns + 1):
        users.append(a.prompt.format(k=k))
        prompt = transcript(users, replies)
        t_start = now()
        if a.mode in ("replay", "tools"):
            result, t_result = None, 0.0
            async for m in query(prompt=prompt, options=options):
                if a.messages:
                    emit({"message": {"class": type(m).__name__, **dataclasses.asdict(m)}})
                if isinstance(m, ResultMessage):
                    result, t_result = m, now()
        else:
            got = asyncio.get_running_loop().create_future()

            async def drain(p, fut):
                try:
                    async for m in query(prompt=p, options=options):
                        if isinstance(m, ResultMessage) and not fut.done():
                            fut.set_result((m, now()))
                finally:
                    if not fut.done():
                        fut.set_result((None, now()))

            tasks.append(asyncio.create_task(drain(prompt, got)))
            result, t_result = await got
        if result is None:
            emit({"turn": k, "error": "no result"})
            return 1
        replies.append(result.result or "")
        emit(turn_line(k, result, t_start, t_result, now()))
    await asyncio.gather(*tasks)
    return 0


async def session(a, options) -> int:
    async with ClaudeSDKClient(options=options) as client:
        for k in range(1, a.turns + 1):
            # A user who takes a while to type (--think seconds).
            await asyncio.sleep(a.think)
            t_start = now()
            await client.query(a.prompt.format(k=k))
            result = None
            async for m in client.receive_response():
                emit({"message": {"class": type(m).__name__, **dataclasses.asdict(m)}})
                if isinstance(m, ResultMessage):
                    result, t_result = m, now()
            if result is None:
                emit({"turn": k, "error": "no result"})
                return 1
            emit(turn_line(k, result, t_start, t_result, now()))
    return 0


async def router(a, options) -> int:
    human = a.labels == "human"
    parts = [] if human or a.labels == "bare" else ["[System: be brief]"]
    async with ClaudeSDKClient(options=options) as client:
        for k in range(1, a.turns + 1):
            parts.append(("Human: " if human else "") + a.prompt.format(k=k))
            t_start = now()
            await client.query("\n\n".join(parts))
            result = None
            async for m in client.receive_response():
                emit({"message": {"class": type(m).__name__, **dataclasses.asdict(m)}})
                if isinstance(m, ResultMessage):
                    result, t_result = m, now()
            if result is None:
                emit({"turn": k, "error": "no result"})
                return 1
            reply = (result.result or "") + ("." if a.edit_replies else "")
            parts.append(f"Assistant: {reply}" if human else f"[Assistant: {reply}]")
            emit(turn_line(k, result, t_start, t_result, now()))
    return 0


async def info(a, options) -> int:
    async with ClaudeSDKClient(options=options) as client:
        got = await client.get_server_info() or {}
        emit({"info": {k: got.get(k) for k in ("output_style", "current_permission_mode")}})
        t_start = now()
        await client.query(a.prompt.format(k=1))
        result = None
        async for m in client.receive_response():
            if isinstance(m, ResultMessage):
                result, t_result = m, now()
        if result is None:
            emit({"turn": 1, "error": "no result"})
            return 1
        emit(turn_line(1, result, t_start, t_result, now()))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["replay", "eager", "session", "router", "info", "tools"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--prompt", default="message {k}")
    ap.add_argument("--think", type=float, default=0.0)
    ap.add_argument("--settings")
    ap.add_argument("--messages", action="store_true")
    ap.add_argument("--edit-replies", action="store_true")
    ap.add_argument("--labels", choices=["bracketed", "human", "bare"], default="bracketed")
    a = ap.parse_args()
    options = ClaudeAgentOptions(cli_path=a.cli, cwd=os.getcwd(), settings=a.settings)
    if a.mode == "tools":
        options.can_use_tool = can_use_tool
        options.hooks = {"PreToolUse": [HookMatcher(matcher=None, hooks=[pre_tool_use])]}
    run = {"session": session, "router": router, "info": info}.get(a.mode, replay)
    return asyncio.run(run(a, options))


if __name__ == "__main__":
    sys.exit(main())
