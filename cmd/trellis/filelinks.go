package main

import (
	"crypto/sha256"

	"github.com/trellis-ai/trellis/api/files"
	"github.com/trellis-ai/trellis/documents/workspace"
)

// apiWorkspace is work as package api takes it: no interface at all,
// rather than one holding a nil pointer, when there is no workspace.
func apiWorkspace(work *workspace.Workspaces) files.Workspace {
	if work == nil {
		return nil
	}
	return work
}

// fileLinkKey is the key that signs the workspace's download links,
// derived from the documents' key (TRELLIS_DOCUMENTS_KEY), the one
// secret every process of a deployment shares, so that any process
// serves a link another made; nil without it, which makes a random key
// per process (a link then works on the process that made it).
func fileLinkKey(documentsKey []byte) []byte {
	if documentsKey == nil {
		return nil
	}
	k := sha256.Sum256(append([]byte("trellis workspace download links\x00"), documentsKey...))
	return k[:]
}
