"""What the pack adds to ComfyUI's server: the /headroom/* routes, the queue-time handler (and the gate
node that blocks a prompt), the panel's settings and the calibration kept between requests."""
