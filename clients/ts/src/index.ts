// overworld's TypeScript client SDK: the client protocol's codec, the
// View of what a player sees, and the WebSocket Client that joins a node,
// follows redirects and reconnects. One ES module, served by every node
// at /overworld.js.

export * from "./proto";
export * from "./view";
export * from "./client";
export * from "./arena";
