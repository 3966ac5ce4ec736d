#!/usr/bin/env python3
"""Convert one real coding-agent session log to an OpenAI Chat Completions message array.

Usage:
  python3 benchmark/heldout/convert.py RAW.jsonl OUT.json --family codex
  python3 benchmark/heldout/convert.py RAW.jsonl OUT.json --family claudecode [--thread main|SESSION_OR_AGENT_ID]
    (--thread main on a subagents/agent-*.jsonl file, which holds only a sidechain, takes that thread)
  python3 benchmark/heldout/convert.py TRAJ.json OUT.json --family mini-swe-agent
    (a mini-swe-agent trajectory: {"messages": [...]} or a bare message list; role and content
     kept, content parts joined with newlines, other keys dropped; a prefix ends after a user message)
  python3 benchmark/heldout/convert.py --validate OUT.json [OUT2.json ...]

Options:
  --max-messages N   keep only a prefix of the run, cut at the last turn boundary
                     (a user message or an assistant message whose calls are all answered)
                     at or before N messages; used for sessions too long to keep whole.
  --stats            print counters and tool-name counts as JSON on stderr.

Conventions (same as ../../shared/corpus/SOURCES.md):
  * messages have role user/assistant/tool (system only if the log records one),
    content (string, or null on an assistant message with only tool calls),
    tool_calls [{id, type:'function', function:{name, arguments: JSON string}}], tool_call_id;
  * one model response split over several log lines is merged into one assistant message;
  * tool results made of text blocks are joined with newlines, images dropped;
  * thinking / reasoning blocks are dropped;
  * calls never answered (cancelled turns) are dropped, results without a call are dropped,
    so every call has its result right after the assistant message that made it;
  * tool names and argument keys are kept as the agent wrote them (Codex custom tools such as
    apply_patch get their free-form input wrapped as {"input": ...}).
Python 3 standard library only.
"""
import argparse
import collections
import json
import sys


def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: bad JSON line: {e}")
    return out


def text_of_blocks(blocks, keep=("text", "input_text", "output_text")):
    if isinstance(blocks, str):
        return blocks
    parts = []
    for b in blocks or []:
        if isinstance(b, str):
            parts.append(b)
        elif isinstance(b, dict) and b.get("type") in keep:
            parts.append(b.get("text", ""))
    return "\n".join(parts)


# ---------------------------------------------------------------- Codex CLI
def convert_codex(records, stats):
    msgs = []
    cur = None  # open assistant message

    def close():
        nonlocal cur
        if cur is not None:
            msgs.append(cur)
            cur = None

    def assistant():
        nonlocal cur
        if cur is None:
            cur = {"role": "assistant", "content": None}
        return cur

    for r in records:
        t = r.get("type")
        p = r.get("payload") or {}
        if t == "session_meta":
            stats["session_meta_lines"] += 1
            if p.get("cli_version"):
                stats["cli_version"] = p["cli_version"]
            if p.get("originator"):
                stats["originator"] = p["originator"]
            continue
        if t == "turn_context":
            if p.get("model"):
                stats["models"][p["model"]] += 1
            continue
        if t != "response_item":
            continue
        pt = p.get("type")
        if pt == "reasoning":
            stats["reasoning_items_dropped"] += 1
        elif pt == "message":
            role = p.get("role")
            text = text_of_blocks(p.get("content"))
            if role == "assistant":
                a = assistant()
                if a.get("tool_calls"):
                    close()
                    a = assistant()
                a["content"] = text if a["content"] is None else a["content"] + "\n" + text
                stats["assistant_text_items"] += 1
            else:
                close()
                msgs.append({"role": "system" if role in ("developer", "system") else "user", "content": text})
        elif pt in ("function_call", "custom_tool_call", "local_shell_call"):
            a = assistant()
            if pt == "function_call":
                name, args = p.get("name"), p.get("arguments", "")
                if not isinstance(args, str):
                    args = json.dumps(args, ensure_ascii=False)
            elif pt == "custom_tool_call":
                name, args = p.get("name"), json.dumps({"input": p.get("input", "")}, ensure_ascii=False)
                stats["custom_tool_calls_wrapped"] += 1
            else:
                name, args = "local_shell", json.dumps(p.get("action", {}), ensure_ascii=False)
            a.setdefault("tool_calls", []).append(
                {"id": p.get("call_id") or p.get("id"), "type": "function",
                 "function": {"name": name, "arguments": args}})
        elif pt in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            close()
            out = p.get("output")
            if isinstance(out, dict) and "content" in out and not isinstance(out.get("content"), str):
                out = text_of_blocks(out["content"])
            elif isinstance(out, dict) and isinstance(out.get("content"), str):
                out = out["content"]
            elif isinstance(out, list):
                out = text_of_blocks(out)
            elif not isinstance(out, str):
                out = json.dumps(out, ensure_ascii=False)
            msgs.append({"role": "tool", "tool_call_id": p.get("call_id"), "content": out})
        elif pt == "ghost_snapshot":
            stats["ghost_snapshot_items_dropped"] += 1
        else:
            stats["other_items_dropped:" + str(pt)] += 1
    close()
    return msgs


# ---------------------------------------------------------------- Claude Code
def claude_thread(records, thread, stats):
    """The user/assistant lines of one thread, in file order."""
    msgs = [r for r in records if r.get("type") in ("user", "assistant")]
    if thread == "main":
        main = [r for r in msgs if not r.get("isSidechain")]
        if not main and msgs:
            # a subagents/agent-*.jsonl file (Claude Code 2.1+) holds only its sidechain thread
            stats["subagent_file"] += 1
            main = msgs
        return main
    return [r for r in msgs if thread in (r.get("sessionId"), r.get("agentId"))]


def claude_active_path(records, lines, stats):
    """Keep the lines on the branch that ends at the thread's last line.

    Lines form a tree through parentUuid (logicalParentUuid across a /compact). A rewind, or a
    session forked from another, leaves earlier branches in the file, often as copies of the same
    messages and tool_use ids under new uuids; reading the file linearly would mix them. Walk back
    from the last line; then add the lines hanging off that path that belong to it: the other
    content-block lines of a path response (same message.id) and tool-result lines, which Claude
    Code chains one after another for parallel calls.
    """
    if not lines or not all(r.get("uuid") for r in lines):
        return lines
    by_uuid = {}
    for r in records:
        if r.get("uuid"):
            by_uuid.setdefault(r["uuid"], r)
    line_ids = {r["uuid"] for r in lines}

    # parent of a line = its parentUuid if that is a line of the thread; when the parent is a
    # progress/system/hook record or absent (Claude Code 2.1 hangs a new prompt on its hook-progress
    # records, whose chain does not reliably lead back to the previous message), the line just before.
    parent = {}
    prev = None
    for r in lines:
        pu = r.get("parentUuid") or r.get("logicalParentUuid")
        if not pu:
            # a new root: the session restarted from a copy of its history (older versions rewrite
            # the whole conversation under new uuids when it is resumed), so what came before is
            # either repeated from here on or an abandoned branch
            if prev is not None:
                stats["new_roots"] += 1
        elif pu not in line_ids:
            stats["non_line_parent_linked_to_previous"] += 1
            pu = prev
        parent[r["uuid"]] = pu
        prev = r["uuid"]
    path = set()
    u = lines[-1]["uuid"]
    while u is not None and u not in path:
        path.add(u)
        u = parent[u]
    mids = {(r.get("message") or {}).get("id") for r in lines if r["uuid"] in path and r.get("type") == "assistant"}
    mids.discard(None)
    keep = set(path)
    changed = True
    while changed:
        changed = False
        for r in lines:
            if r["uuid"] in keep or parent[r["uuid"]] not in keep:
                continue
            c = (r.get("message") or {}).get("content")
            is_frag = r.get("type") == "assistant" and (r.get("message") or {}).get("id") in mids
            is_result = (r.get("type") == "user" and isinstance(c, list) and c
                         and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in c))
            if is_frag or is_result:
                keep.add(r["uuid"])
                changed = True
    out = [r for r in lines if r["uuid"] in keep]
    stats["off_branch_lines_dropped"] += len(lines) - len(out)
    return out


def convert_claude(records, stats, thread="main"):
    msgs = []
    seen = set()
    last_asst_id = None
    open_asst = None
    lines = claude_thread(records, thread, stats)
    lines = claude_active_path(records, lines, stats)
    for r in lines:
        t = r.get("type")
        u = r.get("uuid")
        if u and u in seen:
            stats["duplicate_lines_dropped"] += 1
            continue
        if u:
            seen.add(u)
        if r.get("version"):
            stats["cc_versions"].add(r["version"])
        m = r.get("message") or {}
        content = m.get("content")
        if t == "assistant":
            if m.get("model"):
                stats["models"][m["model"]] += 1
            if m.get("model") == "<synthetic>" or r.get("isApiErrorMessage"):
                # written by the CLI itself (API errors, "No response requested."), not by the model
                stats["synthetic_assistant_dropped"] += 1
                continue
            mid = m.get("id")
            # Claude Code writes one line per content block. From 2.1 on it runs each tool as soon as its
            # tool_use block has streamed, so the result lines of a response's first calls can come before
            # the line of its next call: merge across those tool results (pair_calls then puts every result
            # right after the merged message).
            if open_asst is not None and mid and mid == last_asst_id:
                a = open_asst
                stats["assistant_fragments_merged"] += 1
                if msgs[-1] is not a:
                    stats["fragments_merged_across_tool_results"] += 1
            else:
                a = {"role": "assistant", "content": None}
                msgs.append(a)
                open_asst = a
            last_asst_id = mid
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            for b in blocks:
                bt = b.get("type")
                if bt == "text":
                    if not b.get("text"):
                        continue
                    a["content"] = b["text"] if a["content"] is None else a["content"] + "\n" + b["text"]
                elif bt == "tool_use":
                    a.setdefault("tool_calls", []).append(
                        {"id": b["id"], "type": "function",
                         "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}), ensure_ascii=False)}})
                elif bt in ("thinking", "redacted_thinking"):
                    stats["thinking_blocks_dropped"] += 1
                else:
                    stats["other_assistant_blocks_dropped:" + str(bt)] += 1
        else:
            if isinstance(content, str):
                last_asst_id, open_asst = None, None
                msgs.append({"role": "user", "content": content})
                continue
            texts = []
            for b in content or []:
                bt = b.get("type")
                if bt == "tool_result":
                    c = b.get("content")
                    if isinstance(c, list):
                        imgs = sum(1 for x in c if isinstance(x, dict) and x.get("type") == "image")
                        stats["images_dropped"] += imgs
                        c = text_of_blocks(c)
                    elif c is None:
                        c = ""
                    if b.get("is_error"):
                        stats["error_results"] += 1
                    msgs.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": c})
                elif bt == "text":
                    texts.append(b.get("text", ""))
                elif bt == "image":
                    stats["images_dropped"] += 1
                else:
                    stats["other_user_blocks_dropped:" + str(bt)] += 1
            if texts:
                # a real user turn (typed text, interrupt notice) ends the response; tool results alone do not
                last_asst_id, open_asst = None, None
                msgs.append({"role": "user", "content": "\n".join(texts)})
    return msgs


# ---------------------------------------------------------------- pairing fix-up
def pair_calls(msgs, stats):
    """Put every result right after the assistant message that made its call; drop the rest."""
    results = {}
    for i, m in enumerate(msgs):
        if m["role"] == "tool" and m.get("tool_call_id") not in results:
            results[m["tool_call_id"]] = (i, m)
    call_pos = {}
    for i, m in enumerate(msgs):
        for c in m.get("tool_calls") or []:
            call_pos.setdefault(c["id"], i)
    out = []
    used = set()
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            tid = m.get("tool_call_id")
            if tid not in call_pos or results.get(tid, (None, None))[1] is not m:
                stats["orphan_results_dropped"] += 1
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            kept = []
            for c in m["tool_calls"]:
                r = results.get(c["id"])
                if r and r[0] > i and c["id"] not in used and call_pos[c["id"]] == i:
                    kept.append(c)
                else:
                    stats["unanswered_calls_dropped"] += 1
            m = dict(m)
            if kept:
                m["tool_calls"] = kept
            else:
                m.pop("tool_calls")
            if not kept and not m.get("content"):
                stats["empty_assistant_dropped"] += 1
                continue
            out.append(m)
            for c in kept:
                used.add(c["id"])
                out.append(results[c["id"]][1])
            continue
        if m["role"] == "assistant" and not m.get("content"):
            stats["empty_assistant_dropped"] += 1
            continue
        out.append(m)
    # normalise key order
    norm = []
    for m in out:
        n = {"role": m["role"], "content": m.get("content")}
        if m.get("tool_calls"):
            n["tool_calls"] = m["tool_calls"]
        if m["role"] == "tool":
            n["tool_call_id"] = m["tool_call_id"]
        norm.append(n)
    return norm


def convert_mini(data, stats):
    """mini-swe-agent: commands live in the assistant text, observations are user messages."""
    recs = data["messages"] if isinstance(data, dict) else data
    msgs = []
    for m in recs:
        c = m.get("content")
        if isinstance(c, list):
            c = "\n".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type", "text") == "text")
            stats["content_parts_joined"] += 1
        msgs.append({"role": m["role"], "content": c if c is not None else ""})
    return msgs


def cut_prefix(msgs, n):
    if n is None or len(msgs) <= n:
        return msgs
    k = n
    while k > 0:
        nxt = msgs[k] if k < len(msgs) else None
        if nxt is None or nxt["role"] != "tool":
            return msgs[:k]
        k -= 1
    return msgs


def validate(msgs, name="run"):
    errs = []
    if not isinstance(msgs, list) or not msgs:
        return [f"{name}: not a non-empty list"]
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m.get("role") not in ("user", "assistant", "tool", "system"):
            errs.append(f"{name}[{i}]: bad role {m.get('role')}")
        if m["role"] == "tool":
            errs.append(f"{name}[{i}]: tool message not right after its assistant")
            i += 1
            continue
        if m["role"] != "assistant" and not isinstance(m.get("content"), str):
            errs.append(f"{name}[{i}]: content not a string")
        calls = m.get("tool_calls") or []
        for c in calls:
            try:
                json.loads(c["function"]["arguments"])
            except Exception:
                errs.append(f"{name}[{i}]: arguments of {c['id']} not JSON")
            if c.get("type") != "function":
                errs.append(f"{name}[{i}]: call type")
        if m["role"] == "assistant" and m.get("content") is None and not calls:
            errs.append(f"{name}[{i}]: empty assistant")
        ids = [c["id"] for c in calls]
        j = i + 1
        got = []
        while j < len(msgs) and msgs[j]["role"] == "tool":
            if not isinstance(msgs[j].get("content"), str):
                errs.append(f"{name}[{j}]: tool content not a string")
            got.append(msgs[j].get("tool_call_id"))
            j += 1
        if sorted(got) != sorted(ids) or len(set(ids)) != len(ids):
            errs.append(f"{name}[{i}]: calls {ids} answered by {got}")
        i = j
    return errs


def tool_counts(msgs):
    c = collections.Counter()
    for m in msgs:
        for t in m.get("tool_calls") or []:
            c[t["function"]["name"]] += 1
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("raw", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--family", choices=["codex", "claudecode", "mini-swe-agent"])
    ap.add_argument("--thread", default="main")
    ap.add_argument("--max-messages", type=int)
    ap.add_argument("--stats", action="store_true")
    ap.add_argument("--validate", nargs="+")
    a = ap.parse_args()
    if a.validate:
        bad = 0
        for p in a.validate:
            msgs = json.load(open(p, encoding="utf-8"))
            errs = validate(msgs, p)
            for e in errs[:20]:
                print(e)
            bad += bool(errs)
            if not errs:
                print(f"ok {p}: {len(msgs)} msgs")
        sys.exit(1 if bad else 0)
    if not (a.raw and a.out and a.family):
        ap.error("RAW OUT --family are required")
    stats = collections.Counter()
    stats["models"] = collections.Counter()
    stats["cc_versions"] = set()
    if a.family == "mini-swe-agent":
        msgs = convert_mini(json.load(open(a.raw, encoding="utf-8")), stats)
        full = len(msgs)
        if a.max_messages is not None and len(msgs) > a.max_messages:
            msgs = msgs[:a.max_messages]
            while msgs and msgs[-1]["role"] != "user":
                msgs.pop()
    else:
        recs = read_jsonl(a.raw)
        if a.family == "codex":
            msgs = convert_codex(recs, stats)
        else:
            msgs = convert_claude(recs, stats, a.thread)
        msgs = pair_calls(msgs, stats)
        full = len(msgs)
        msgs = cut_prefix(msgs, a.max_messages)
    errs = validate(msgs, a.out)
    if errs:
        for e in errs[:20]:
            print(e, file=sys.stderr)
        sys.exit(2)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(msgs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    if a.stats:
        s = {k: v for k, v in stats.items() if v}
        s["models"] = dict(stats["models"])
        s["cc_versions"] = sorted(stats["cc_versions"])
        s["messages"] = len(msgs)
        s["messages_before_cut"] = full
        s["roles"] = dict(collections.Counter(m["role"] for m in msgs))
        s["chars"] = sum(len(m.get("content") or "") + sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or []) for m in msgs)
        s["largest_tool_result"] = max([len(m["content"]) for m in msgs if m["role"] == "tool"] or [0])
        s["tools"] = dict(tool_counts(msgs).most_common())
        print(json.dumps(s, ensure_ascii=False), file=sys.stderr)


if __name__ == "__main__":
    main()
