"""HeadroomQueueGate: how the queue-time handler blocks a prompt with a readable reason.

ComfyUI ignores exceptions raised by prompt handlers and queues any prompt with one valid output, so
a block replaces the prompt with this single node, whose validation fails with the plan as its
message; ComfyUI answers the queue request with 400 and shows that message. It never executes."""


class HeadroomQueueGate:
    CATEGORY = "Headroom/internal"
    FUNCTION = "gate"
    RETURN_TYPES = ()
    OUTPUT_NODE = True
    DEPRECATED = True  # keeps it out of the node search; users never add it
    DESCRIPTION = "Internal: stands in for a prompt Headroom blocked at queue time."

    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"reason": ("STRING", {"default": "", "multiline": True})}}

    @classmethod
    def VALIDATE_INPUTS(cls, reason):
        return reason or "Headroom blocked this prompt."

    def gate(self, reason):
        raise RuntimeError(reason or "Headroom blocked this prompt.")


GATE_CLASS = "HeadroomQueueGate"
STANDALONE_ID = "headroom_gate"  # for a prompt with no node of its own (tests, API clients' empty graphs)


def gate_node_id(prompt: dict, changes=(), preflight_ids=()) -> str:
    """The id the gate takes in the blocked prompt: one of the user's own nodes. ComfyUI keys its answer's
    node_errors by it, and the frontend's issues panel offers to locate that node; an id not in the graph
    leaves the button pointing nowhere. The node the plan's first change edits is where the fix is made,
    else the user's Preflight node, else the first node of the top-level graph (a "194:46" execution path
    is inside a subgraph, which older frontends cannot locate)."""
    ids = _node_ids(prompt)
    wanted = []
    for change in changes:
        edits = change.get("edits") if isinstance(change, dict) else None
        for edit in [change, *(edits if isinstance(edits, list) else [])]:
            if isinstance(edit, dict) and edit.get("node_id") is not None:
                wanted.append(str(edit["node_id"]))
    for candidate in [*wanted, *preflight_ids, *(k for k in ids if ":" not in k), *ids]:
        if candidate in ids:
            return candidate
    return STANDALONE_ID


def _node_ids(prompt: dict) -> list:
    """The ids of the prompt's nodes: an API prompt's keys that hold a node, or the nodes of a workflow
    in the UI format (which a client may queue as is; its other keys are no nodes)."""
    nodes = prompt.get("nodes")
    if isinstance(nodes, list):
        return [str(n["id"]) for n in nodes if isinstance(n, dict) and n.get("id") is not None]
    return [k for k, n in prompt.items() if isinstance(k, str) and isinstance(n, dict)
            and ("class_type" in n or "inputs" in n)]


def blocked_prompt(reason: str, node_id: str = STANDALONE_ID) -> dict:
    return {node_id: {"class_type": GATE_CLASS, "inputs": {"reason": reason}}}


def gate_of(prompt: dict):
    """(id, node) of the gate in a blocked prompt, or (None, None) when the prompt is not one."""
    if isinstance(prompt, dict) and len(prompt) == 1:
        (node_id, node), = prompt.items()
        if isinstance(node, dict) and node.get("class_type") == GATE_CLASS:
            return node_id, node
    return None, None
