// ComfyUI entry point: the only module that touches ComfyUI's globals. All logic lives in the
// headroom_*.js modules, which take `app` and `api` as parameters (and are tested in a browser).
import { app } from "../../scripts/app.js";
import { api } from "../../scripts/api.js";
import { createHeadroomExtension } from "./headroom_extension.js";

app.registerExtension(createHeadroomExtension(app, api).definition);
