package operators_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

type echoIn struct {
	Text  string `json:"text" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty"`
}

func echoTool(opts ...operators.ToolOption) operators.Tool {
	return operators.NewTool("echo", "Echoes text.", func(_ context.Context, call operators.Call, in echoIn) (operators.Result, error) {
		return operators.TextResult(strings.Repeat(in.Text, max(in.Times, 1))), nil
	}, opts...)
}

func newTestProvider(t *testing.T, cfg operators.ProviderConfig, sources ...operators.Source) *operators.Provider {
	t.Helper()
	if cfg.Local == nil {
		cfg.Local = operators.NewRegistry()
		cfg.Local.MustAdd(echoTool())
	}
	p := operators.NewProvider(cfg)
	for _, s := range sources {
		if err := p.AddSource(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestSchemaGeneratedFromStruct(t *testing.T) {
	spec := echoTool().Spec()
	got, err := json.Marshal(spec.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"text":{"type":"string","description":"what to echo"},"times":{"type":"integer"}},"required":["text"],"additionalProperties":false}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
}

func TestArgumentsAreValidatedBeforeTheToolRuns(t *testing.T) {
	ran := false
	local := operators.NewRegistry()
	local.MustAdd(operators.NewTool("echo", "Echoes.", func(_ context.Context, _ operators.Call, in echoIn) (operators.Result, error) {
		ran = true
		return operators.TextResult(in.Text), nil
	}))
	p := newTestProvider(t, operators.ProviderConfig{Local: local})
	tests := []struct {
		name, args, wantInError string
	}{
		{"missing required", `{}`, `missing properties: ["text"]`},
		{"wrong type", `{"text": 3}`, `text`},
		{"unknown property", `{"text":"a","colour":"red"}`, `"colour"`},
		{"not an object", `["a"]`, `must be a JSON object`},
		{"not JSON", `{"text":`, `not valid JSON`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := p.Execute(t.Context(), "echo", json.RawMessage(tc.args), operators.Call{})
			if !errors.Is(res.Err, operators.ErrInvalidArguments) {
				t.Fatalf("Err = %v, want ErrInvalidArguments", res.Err)
			}
			if !strings.Contains(res.Error, tc.wantInError) || !strings.Contains(res.Error, "expected text (string, required), times (integer)") {
				t.Errorf("error %q should name %s and what the tool expects", res.Error, tc.wantInError)
			}
		})
	}
	if ran {
		t.Error("the tool ran with invalid arguments")
	}
	if res := p.Execute(t.Context(), "echo", json.RawMessage(`{"text":"ok"}`), operators.Call{}); res.IsError() || res.Text() != "ok" {
		t.Errorf("valid call = %+v", res)
	}
}

func TestUnknownToolAndPanicsAreErrorResults(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(operators.NewTool("bad", "Panics.", func(context.Context, operators.Call, struct{}) (operators.Result, error) {
		var m map[string]int
		m["x"]++
		return operators.Result{}, nil
	}))
	p := newTestProvider(t, operators.ProviderConfig{Local: local})
	res := p.Execute(t.Context(), "nope", nil, operators.Call{})
	if !errors.Is(res.Err, operators.ErrUnknownTool) || !strings.Contains(res.Error, "available tools: bad") {
		t.Errorf("unknown tool = %q", res.Error)
	}
	res = p.Execute(t.Context(), "bad", nil, operators.Call{})
	if !errors.Is(res.Err, operators.ErrToolPanic) || !strings.Contains(res.Error, "assignment to entry in nil map") {
		t.Errorf("panic = %q", res.Error)
	}
}

func TestToolErrorBecomesResult(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(operators.NewTool("fails", "Fails.", func(context.Context, operators.Call, struct{}) (operators.Result, error) {
		return operators.Result{}, errors.New("disk full")
	}))
	p := newTestProvider(t, operators.ProviderConfig{Local: local})
	res := p.Execute(t.Context(), "fails", nil, operators.Call{})
	if res.Status != operators.StatusError || res.Text() != "error: disk full" {
		t.Errorf("result = %+v", res)
	}
}

func TestNamesQualifiedOnCollision(t *testing.T) {
	a := &fakeSource{name: "alpha", specs: []operators.Spec{querySpec("search"), querySpec("echo"), querySpec("fetch")}}
	b := &fakeSource{name: "beta", specs: []operators.Spec{querySpec("search")}}
	p := newTestProvider(t, operators.ProviderConfig{}, a, b)

	var names []string
	for _, ti := range p.Tools() {
		names = append(names, ti.Name+"/"+string(ti.Source)+"/"+ti.Server)
	}
	want := "echo/local/ alpha.echo/mcp/alpha fetch/mcp/alpha alpha.search/mcp/alpha beta.search/mcp/beta"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("tools\n got %s\nwant %s", got, want)
	}
	q := json.RawMessage(`{"query":"x"}`)
	if got := p.Execute(t.Context(), "beta.search", q, operators.Call{}).Text(); got != "ok from beta.search" {
		t.Errorf("beta.search → %q", got)
	}
	if got := p.Execute(t.Context(), "fetch", q, operators.Call{}).Text(); got != "ok from alpha.fetch" {
		t.Errorf("fetch → %q", got)
	}
	if res := p.Execute(t.Context(), "search", q, operators.Call{}); !errors.Is(res.Err, operators.ErrUnknownTool) {
		t.Errorf("ambiguous plain name ran: %+v", res)
	}
	if got := p.Execute(t.Context(), "echo", json.RawMessage(`{"text":"l"}`), operators.Call{}).Text(); got != "l" {
		t.Errorf("local echo must win, got %q", got)
	}
	if !p.IsLocal("echo") || p.IsLocal("fetch") || p.IsLocal("alpha.echo") {
		t.Error("IsLocal wrong")
	}
	// a remote tool's arguments are validated too
	if res := p.Execute(t.Context(), "fetch", json.RawMessage(`{}`), operators.Call{}); !errors.Is(res.Err, operators.ErrInvalidArguments) {
		t.Errorf("remote args not validated: %+v", res)
	}
	if !p.RemoveSource("beta") {
		t.Fatal("RemoveSource")
	}
	if got := p.Execute(t.Context(), "search", q, operators.Call{}).Text(); got != "ok from alpha.search" {
		t.Errorf("after removing beta, search → %q", got)
	}
	if err := p.AddSource(t.Context(), &fakeSource{name: "alpha"}); !errors.Is(err, operators.ErrDuplicateSource) {
		t.Errorf("duplicate source: %v", err)
	}
}

func TestRefreshMarksFailingSourceUnavailable(t *testing.T) {
	src := &fakeSource{name: "srv", specs: []operators.Spec{querySpec("search")}}
	p := newTestProvider(t, operators.ProviderConfig{}, src)
	src.listErr = errors.New("connection refused")
	if err := p.Refresh(t.Context()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Refresh = %v", err)
	}
	tools := p.Tools()
	if tools[1].Name != "search" || tools[1].Available {
		t.Errorf("after a failed refresh: %+v", tools[1])
	}
	if h := p.Health(t.Context()); len(h) != 1 || h[0].Err == nil || h[0].Breaker != llm.BreakerClosed {
		t.Errorf("Health = %+v", h)
	}
	src.listErr = nil
	if err := p.Refresh(t.Context()); err != nil || !p.Tools()[1].Available {
		t.Errorf("Refresh = %v, available = %v", err, p.Tools()[1].Available)
	}
}

func TestApprovalPolicy(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(
		echoTool(),
		operators.NewTool("rm", "Deletes.", func(context.Context, operators.Call, struct{}) (operators.Result, error) {
			return operators.TextResult("gone"), nil
		}, operators.Destructive()),
		operators.NewTool("pay", "Pays.", func(context.Context, operators.Call, struct{}) (operators.Result, error) {
			return operators.TextResult("paid"), nil
		}, operators.RequiresApproval()),
	)
	src := &fakeSource{name: "mail", specs: []operators.Spec{querySpec("send")}}
	tests := []struct {
		policy operators.ApprovalPolicy
		want   map[string]bool
	}{
		{operators.ApprovalPolicy{}, map[string]bool{"echo": false, "rm": false, "pay": true, "send": false}},
		{operators.ApprovalPolicy{Destructive: true}, map[string]bool{"echo": false, "rm": true, "pay": true, "send": false}},
		{operators.ApprovalPolicy{Tools: []string{"mail.send", "echo"}}, map[string]bool{"echo": true, "rm": false, "pay": true, "send": true, "mail.send": true}},
	}
	for _, tc := range tests {
		p := newTestProvider(t, operators.ProviderConfig{Local: local, Approval: tc.policy}, src)
		for name, want := range tc.want {
			if got := p.NeedsApproval(name); got != want {
				t.Errorf("policy %+v: NeedsApproval(%s) = %v, want %v", tc.policy, name, got, want)
			}
		}
		for _, ti := range p.Tools() {
			if ti.RequiresApproval != tc.want[ti.Name] {
				t.Errorf("policy %+v: listing says %s requires_approval=%v", tc.policy, ti.Name, ti.RequiresApproval)
			}
		}
		src = &fakeSource{name: "mail", specs: src.specs}
	}
}

func TestSummariesAndLLMTools(t *testing.T) {
	p := newTestProvider(t, operators.ProviderConfig{Approval: operators.ApprovalPolicy{Tools: []string{"search"}}},
		&fakeSource{name: "srv", specs: []operators.Spec{querySpec("search")}})
	want := "- echo [local]: Echoes text.\n- search [mcp]: search tool (needs approval)\n"
	if got := p.Summaries(); got != want {
		t.Errorf("Summaries\n got %q\nwant %q", got, want)
	}
	tools := p.LLMTools()
	if len(tools) != 2 || tools[0].Type != "function" || tools[0].Function.Name != "echo" {
		t.Fatalf("LLMTools = %+v", tools)
	}
	params, ok := tools[0].Function.Parameters.(map[string]any)
	if !ok || params["type"] != "object" {
		t.Errorf("Parameters = %#v, want a map[string]any schema", tools[0].Function.Parameters)
	}
}

func TestToolsListingJSONMatchesAPI(t *testing.T) {
	p := newTestProvider(t, operators.ProviderConfig{})
	b, err := json.Marshal(p.Tools()[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "description", "source", "input_schema", "requires_approval", "available"} {
		if _, ok := m[k]; !ok {
			t.Errorf("listing lacks %q: %s", k, b)
		}
	}
}

// The catalog is cached; every change to what it lists must show at once.
func TestCatalogFollowsChanges(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(echoTool())
	ops := operators.NewOperatorRegistry(nil)
	p := newTestProvider(t, operators.ProviderConfig{Local: local, Operators: ops})
	names := func() string {
		var out []string
		for _, ti := range p.Catalog().Tools {
			if ti.Available {
				out = append(out, ti.Name)
			}
		}
		if len(p.Catalog().LLMTools) != len(out) {
			t.Errorf("catalog: %d definitions for %d available tools", len(p.Catalog().LLMTools), len(out))
		}
		return strings.Join(out, " ")
	}
	check := func(step, want string) {
		t.Helper()
		if got := names(); got != want {
			t.Errorf("after %s: available tools %q, want %q", step, got, want)
		}
	}
	check("start", "echo")
	check("a second look (cached)", "echo")

	local.MustAdd(operators.NewTool("shout", "Shouts.", func(_ context.Context, _ operators.Call, in echoIn) (operators.Result, error) {
		return operators.TextResult(strings.ToUpper(in.Text)), nil
	}))
	check("Registry.Add", "echo shout")

	if err := operators.RegisterBuiltinOperators(ops); err != nil {
		t.Fatal(err)
	}
	check("OperatorRegistry.Register", "echo shout coder query_rewriter")

	src := &fakeSource{name: "srv", specs: []operators.Spec{querySpec("search")}}
	if err := p.AddSource(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	check("AddSource", "echo shout coder query_rewriter search")

	src.listErr = errors.New("down")
	if err := p.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh of a failing source succeeded")
	}
	check("a failed Refresh", "echo shout coder query_rewriter")

	src.listErr = nil
	src.specs = append(src.specs, querySpec("fetch"))
	if err := p.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("a good Refresh", "echo shout coder query_rewriter fetch search")

	p.RemoveSource("srv")
	check("RemoveSource", "echo shout coder query_rewriter")

	// Tools hands out its own slice: changing it leaves the catalog alone.
	tools := p.Tools()
	tools[0].Name = "changed"
	check("changing Tools' result", "echo shout coder query_rewriter")
}

// An approval's deadline is the policy's rule for the tool, by its plain
// or qualified name, else the policy's default, with reject as the
// outcome when none is given; the zero policy's approvals wait for ever.
func TestApprovalExpiry(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(echoTool())
	src := &fakeSource{name: "mail", specs: []operators.Spec{querySpec("send")}}
	policy := operators.ApprovalPolicy{Expiry: operators.Expiry{Timeout: time.Hour},
		ToolExpiry: map[string]operators.Expiry{"mail.send": {Timeout: 2 * time.Minute, Outcome: events.ExpiryApprove}}}
	p := newTestProvider(t, operators.ProviderConfig{Local: local, Approval: policy}, src)
	hour := operators.Expiry{Timeout: time.Hour, Outcome: events.ExpiryReject}
	send := operators.Expiry{Timeout: 2 * time.Minute, Outcome: events.ExpiryApprove}
	for name, want := range map[string]operators.Expiry{"echo": hour, "send": send, "mail.send": send, "unknown": hour} {
		if got := p.ApprovalExpiry(name); got != want {
			t.Errorf("ApprovalExpiry(%s) = %+v, want %+v", name, got, want)
		}
	}
	zero := newTestProvider(t, operators.ProviderConfig{Local: local}, &fakeSource{name: "mail", specs: src.specs})
	if got := zero.ApprovalExpiry("echo"); got != (operators.Expiry{}) {
		t.Errorf("the zero policy's deadline: %+v, want none", got)
	}
}

// A question's deadline is the provider's default for a tool of no
// source that sets one, decline when no outcome is given; the zero
// config's questions wait for ever.
func TestElicitationExpiry(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(echoTool())
	p := newTestProvider(t, operators.ProviderConfig{Local: local, ElicitationExpiry: operators.Expiry{Timeout: time.Hour}})
	if got, want := p.ElicitationExpiry("echo"), (operators.Expiry{Timeout: time.Hour, Outcome: events.ExpiryDecline}); got != want {
		t.Errorf("ElicitationExpiry(echo) = %+v, want %+v", got, want)
	}
	zero := newTestProvider(t, operators.ProviderConfig{Local: local})
	if got := zero.ElicitationExpiry("echo"); got != (operators.Expiry{}) {
		t.Errorf("the zero config's deadline: %+v, want none", got)
	}
}
