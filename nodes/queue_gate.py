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


def blocked_prompt(reason: str) -> dict:
    return {"headroom_gate": {"class_type": "HeadroomQueueGate", "inputs": {"reason": reason}}}
