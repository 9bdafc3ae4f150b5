// Preloaded with `node --require` by package mcp's tests: every server the
// process starts listens on 127.0.0.1 only, whatever host it asked for, so
// the reference servers under test are never reachable from the network.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = args[0];
    const rest = args.slice(1).filter((a) => typeof a === "function" || typeof a === "object");
    const cb = rest.find((a) => typeof a === "function");
    return listen.call(this, { port: Number(port), host: "127.0.0.1" }, cb);
  }
  if (args[0] && typeof args[0] === "object" && !Array.isArray(args[0])) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
