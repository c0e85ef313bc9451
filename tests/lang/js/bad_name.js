import { tool } from "./piton.js";

export const fine = tool(function fine() { return "fine"; });

export const misnamed = tool(function misnamed() { return 1; }, { name: "two words" });
