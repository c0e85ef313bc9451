import { tool } from "./piton.js";

export const broken = tool(function broken() { return 1 +; });
