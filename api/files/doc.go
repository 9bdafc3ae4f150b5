// Package files is the native API's endpoints of the agent's workspace
// (documents/workspace): a scope's files listed, read (a version's too),
// uploaded, deleted, their versions listed and restored, a download link
// that works without credentials, and the projects whose scope their
// members share, with a conversation attached to one. It is HTTP over
// the workspace, taken through two small interfaces (Files, Projects):
// who may reach a scope, paths, versions and quotas are the
// workspace's; here are the scope in the URL ("me" is the caller), strict
// query parameters and bodies, the per-file body limit, a content type
// by extension, pages bounded by their limit, and the links.
//
// # Download links
//
// A link is the bucket's presigned URL when the workspace can make one
// (Presigner; S3 without Trellis' encryption), else a token of this
// server's: the user, the scope, the path, the version and the expiry,
// signed with HMAC-SHA256 under Config.LinkKey, served by the signed
// endpoint (SignedRoutes), which package api mounts outside its
// authentication. Serving a token reads the version as its user, so a
// user who lost access to the scope loses the link too.
//
// Package api mounts it behind its authentication when it is given a
// workspace, and answers its errors (Config.Error) as it answers its own.
package files
