import { tool } from "./piton.js";

export const sure = tool(function sure() {}, { readOnly: true, destructive: true });
