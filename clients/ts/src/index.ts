// overworld's TypeScript client SDK: the client protocol's codec, the
// View of what a player sees, and the WebSocket Client that joins a node,
// follows redirects, takes its avatar back where it failed over, and
// reconnects. One ES module, served by every node
// at /overworld.js.

export * from "./proto";
export * from "./view";
export * from "./client";
export * from "./arena";
