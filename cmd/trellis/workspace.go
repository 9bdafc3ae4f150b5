package main

import (
	"fmt"
	"strconv"

	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/store"
)

// workspaceConfig is what serve reads about the agent's workspace.
type workspaceConfig struct {
	// approve lists the file operations (write, edit, delete) that ask a
	// person first.
	approve []string
	limits  workspace.Limits
}

// parseWorkspace reads the workspace's flags.
func parseWorkspace(c *workspaceConfig, approve, fileBytes, scopeBytes, scopeFiles string) []error {
	var errs []error
	var err error
	if c.approve, err = workspace.ParseApprove(approve); err != nil {
		errs = append(errs, fmt.Errorf("workspace-approve: %w", err))
	}
	if c.approve == nil {
		c.approve = []string{} // "none": no operation asks
	}
	for _, l := range []struct {
		name, v string
		to      *int64
	}{{"workspace-file-bytes", fileBytes, &c.limits.FileBytes}, {"workspace-scope-bytes", scopeBytes, &c.limits.ScopeBytes},
		{"workspace-scope-files", scopeFiles, &c.limits.ScopeFiles}} {
		if *l.to, err = strconv.ParseInt(l.v, 10, 64); err != nil || *l.to <= 0 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive number", l.name, l.v))
		}
	}
	return errs
}

// openWorkspace builds the agent's workspace over the record and the
// documents' file store; nil when documents are off (the workspace
// keeps its bytes where they keep theirs) or the record keeps no
// workspaces.
func openWorkspace(cfg serveConfig, st store.Store, docs *ingest.Service) *workspace.Workspaces {
	rec, ok := st.(workspace.Record)
	if docs == nil || !ok {
		return nil
	}
	return workspace.New(rec, docs.Files(), cfg.workspace.limits)
}
