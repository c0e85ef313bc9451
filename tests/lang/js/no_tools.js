// Exports no tool.
export const answer = 42;
