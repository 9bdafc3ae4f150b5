package agui

import (
	"net/http"

	"github.com/trellis-ai/trellis/api/jsonbody"
)

// capabilities is AG-UI's AgentCapabilities as Trellis declares them:
// only what holds, an absent category meaning "not declared".
type capabilities struct {
	Identity       identity       `json:"identity"`
	Transport      transport      `json:"transport"`
	Tools          tools          `json:"tools"`
	State          stateCaps      `json:"state"`
	MultiAgent     *multiAgent    `json:"multiAgent,omitempty"`
	Reasoning      reasoning      `json:"reasoning"`
	HumanInTheLoop humanInTheLoop `json:"humanInTheLoop"`
}

type identity struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// transport: SSE only. A stream is not resumable over AG-UI: the client
// (HttpAgent) has no connect, and a gone client's run is cancelled.
type transport struct {
	Streaming bool `json:"streaming"`
	Resumable bool `json:"resumable"`
}

// tools: Trellis' own, called in parallel; the client's tools in
// RunAgentInput are ignored.
type tools struct {
	Supported      bool `json:"supported"`
	ParallelCalls  bool `json:"parallelCalls"`
	ClientProvided bool `json:"clientProvided"`
}

// stateCaps: STATE_SNAPSHOT at each run's end, and the thread kept by
// the server.
type stateCaps struct {
	Snapshots       bool `json:"snapshots"`
	Deltas          bool `json:"deltas"`
	PersistentState bool `json:"persistentState"`
}

type multiAgent struct {
	Supported  bool           `json:"supported"`
	Delegation bool           `json:"delegation"`
	Subagents  []subagentInfo `json:"subagents"`
}

type subagentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type reasoning struct {
	Supported bool `json:"supported"`
	Streaming bool `json:"streaming"`
}

type humanInTheLoop struct {
	Supported        bool `json:"supported"`
	Approvals        bool `json:"approvals"`
	Interrupts       bool `json:"interrupts"`
	ApproveWithEdits bool `json:"approveWithEdits"`
}

// Capabilities serves GET /ag-ui/capabilities: what the agent behind
// POST /ag-ui supports, for a client's getCapabilities. Sub-agents are
// declared when the server has some (the task tool delegates to them).
func (h *Handler) Capabilities(w http.ResponseWriter, _ *http.Request) {
	c := capabilities{
		Identity:       identity{Name: "Trellis", Type: "trellis", Description: "Trellis' agent: a supervisor that calls tools, reflects and answers"},
		Transport:      transport{Streaming: true},
		Tools:          tools{Supported: true, ParallelCalls: true},
		State:          stateCaps{Snapshots: true, PersistentState: true},
		Reasoning:      reasoning{Supported: true, Streaming: true},
		HumanInTheLoop: humanInTheLoop{Supported: true, Approvals: true, Interrupts: true, ApproveWithEdits: true},
	}
	if subs := h.cfg.Runs.SubAgents(); len(subs) > 0 {
		c.MultiAgent = &multiAgent{Supported: true, Delegation: true}
		for _, s := range subs {
			c.MultiAgent.Subagents = append(c.MultiAgent.Subagents, subagentInfo{Name: s.Name, Description: s.Description})
		}
	}
	jsonbody.Write(w, http.StatusOK, c)
}
