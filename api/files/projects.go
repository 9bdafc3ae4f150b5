package files

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/runs"
)

// Projects is what the project endpoints need of the workspace
// (*workspace.Workspaces). A project the user is not a member of is
// workspace.ErrNotFound.
type Projects interface {
	CreateProject(ctx context.Context, owner, name string) (workspace.Project, error)
	Projects(ctx context.Context, user string) ([]workspace.Project, error)
	Project(ctx context.Context, user, id string) (workspace.Project, error)
	AddMember(ctx context.Context, owner, project, member string) (workspace.Project, error)
	RemoveMember(ctx context.Context, owner, project, member string) (workspace.Project, error)
	DeleteProject(ctx context.Context, owner, project string) error
	AttachConversation(ctx context.Context, user, conversation, project string) error
}

// Workspace is the files and the projects of one workspace, and its
// limits: what package api is given.
type Workspace interface {
	Files
	Projects
	Limits() workspace.Limits
}

// project is a project as the API answers it.
type project struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	Members   []string  `json:"members"`
	CreatedAt time.Time `json:"created_at"`
}

func projectOf(p workspace.Project) project {
	m := p.Members
	if m == nil {
		m = []string{}
	}
	return project{ID: p.ID, Name: p.Name, Owner: p.Owner, Members: m, CreatedAt: p.CreatedAt.UTC()}
}

func (h *Handler) projectRoutes(r chi.Router) {
	r.Post("/projects", h.handleCreateProject)
	r.Get("/projects", h.handleProjects)
	r.Get("/projects/{id}", h.handleProject)
	r.Delete("/projects/{id}", h.handleDeleteProject)
	r.Post("/projects/{id}/members", h.handleAddMember)
	r.Delete("/projects/{id}/members/{user_id}", h.handleRemoveMember)
	r.Put("/conversations/{id}/project", h.handleAttach)
}

func (h *Handler) handleCreateProject(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name string `json:"name"`
	}
	if err := jsonbody.Decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.cfg.Projects.CreateProject(r.Context(), runs.UserFrom(r.Context()), b.Name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusCreated, projectOf(p))
}

func (h *Handler) handleProjects(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		h.fail(w, r, err)
		return
	}
	ps, err := h.cfg.Projects.Projects(r.Context(), runs.UserFrom(r.Context()))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]project, len(ps))
	for i, p := range ps {
		out[i] = projectOf(p)
	}
	jsonbody.Write(w, http.StatusOK, map[string][]project{"projects": out})
}

func (h *Handler) handleProject(w http.ResponseWriter, r *http.Request) {
	p, err := h.cfg.Projects.Project(r.Context(), runs.UserFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, projectOf(p))
}

func (h *Handler) handleDeleteProject(w http.ResponseWriter, r *http.Request) {
	if err := h.cfg.Projects.DeleteProject(r.Context(), runs.UserFrom(r.Context()), r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) handleAddMember(w http.ResponseWriter, r *http.Request) {
	var b struct {
		UserID string `json:"user_id"`
	}
	if err := jsonbody.Decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	if b.UserID == "" {
		h.fail(w, r, httperr.New(http.StatusBadRequest, "invalid_field", `"user_id" is required: the user to add`))
		return
	}
	p, err := h.cfg.Projects.AddMember(r.Context(), runs.UserFrom(r.Context()), r.PathValue("id"), b.UserID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, projectOf(p))
}

func (h *Handler) handleRemoveMember(w http.ResponseWriter, r *http.Request) {
	p, err := h.cfg.Projects.RemoveMember(r.Context(), runs.UserFrom(r.Context()), r.PathValue("id"), r.PathValue("user_id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, projectOf(p))
}

// handleAttach is PUT /conversations/{id}/project: {"project_id": "…"}
// attaches, {"project_id": null} detaches.
func (h *Handler) handleAttach(w http.ResponseWriter, r *http.Request) {
	var b struct {
		ProjectID json.RawMessage `json:"project_id"`
	}
	if err := jsonbody.Decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	var pid *string
	if b.ProjectID == nil || json.Unmarshal(b.ProjectID, &pid) != nil || (pid != nil && *pid == "") {
		h.fail(w, r, httperr.New(http.StatusBadRequest, "invalid_field", `"project_id" is required: a project's id, or null to detach`))
		return
	}
	id := ""
	if pid != nil {
		id = *pid
	}
	conv := r.PathValue("id")
	if err := h.cfg.Projects.AttachConversation(r.Context(), runs.UserFrom(r.Context()), conv, id); err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, struct {
		ConversationID string  `json:"conversation_id"`
		ProjectID      *string `json:"project_id"`
	}{conv, pid})
}
