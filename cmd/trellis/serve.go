package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/api/signin"
	"github.com/trellis-ai/trellis/api/web"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/cognition/memtools"
	"github.com/trellis-ai/trellis/documents/doctools"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/webhooks"
)

// serveConfig is everything `trellis serve` reads from flags and the
// environment; a flag wins over its variable.
type serveConfig struct {
	addr        string
	dataDir     string
	databaseURL string
	keys        map[middleware.APIKey]string
	// auth: requests authenticate with an API key (of keys, or issued in
	// the service); otherwise local mode.
	auth bool
	// oidc: bearer JWTs of an OpenID Connect issuer authenticate too,
	// when its Issuer is set.
	oidc middleware.OIDCConfig
	// signIn: the web page signs people in through the issuer, when its
	// RedirectURL is set (its Issuer, ClientID and Sessions are filled
	// in by build).
	signIn             signin.Config
	admins             []string
	mcpConfig          string
	approvalTools      []string
	approvalExpiry     operators.Expiry
	questionExpiry     operators.Expiry
	clarifyExpiry      operators.Expiry
	uncertainExpiry    operators.Expiry
	corsOrigins        []string
	trustedProxies     []string
	limits             api.Limits
	maxMessage         int
	interruptAfter     time.Duration
	elicitTimeout      time.Duration
	cancelOnDisconnect bool
	shutdownTimeout    time.Duration
	jobTimeout         time.Duration
	claimInterval      time.Duration
	maxToolResult      int
	// code: the limits of each run_code call.
	code          sandbox.Limits
	summaryTokens int
	// keepCheckpoints: each branch's newest checkpoints the prune job
	// keeps; 0 turns the job off.
	keepCheckpoints int
	// retentionDays: conversations idle longer are erased; 0 keeps them.
	retentionDays int
	// eventRetentionDays: the events of runs that ended longer ago are
	// compacted; 0 keeps them whole.
	eventRetentionDays int
	unhealthyAfter     time.Duration
	durability         graph.Durability
	logLevel           slog.Level
	documents          documentsConfig
	workspace          workspaceConfig
	cognition          cognitionConfig
	subAgents          nodes.SubAgents
	budget             events.Budget
	// monthlyQuota caps a user's tokens in a UTC month; 0: no quota.
	monthlyQuota int64
	systemPrompt string
	webhooks     webhooks.Settings
}

// defaultInterruptAfter is how long an open stream waits for an
// approval unless told otherwise.
const defaultInterruptAfter = 60 * time.Second

// parseServe reads the configuration. Model settings (TRELLIS_MODEL,
// provider keys) are llm.ConfigFromEnv's.
func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := flag.NewFlagSet("trellis serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	var (
		keys, authMode, approval, cors, logLevel string
		oidcAlgs, sessionTTL                     string
		admins                                   string
		interrupt, elicitTO, shutdown, claim     string
		unhealthy, jobTimeout                    string
		maxBody, maxMsg, rate, burst, maxRuns    string
		cancelOnDisconnect, maxToolResult        string
		authPerMin, authBurst, proxies           string
		docDir, docShared, docMax, docCount      string
		docExtract                               string
		durability                               string
		cogOn, cogBudget, memMax, memTTL         string
		learnAfter, learnEvery                   string
		subAgents, budgetTokens, budgetCalls     string
		budgetTime, systemPrompt, summaryTokens  string
		keepCheckpoints                          string
		retentionDays, eventRetentionDays        string
		approvalTimeout, approvalExpiry          string
		questionTimeout, questionExpiry          string
		clarifyTimeout, clarifyExpiry            string
		uncertainTimeout, uncertainExpiry        string
		webhooksFile                             string
		monthlyQuota                             string
		codeTime, codeMemory, codeOutput         string
		codeConcurrent                           string
		wsApprove, wsFileBytes, wsScopeBytes     string
		wsScopeFiles                             string
	)
	fs.StringVar(&c.addr, "addr", env("TRELLIS_ADDR", ""), "listen address (TRELLIS_ADDR); default 127.0.0.1:8080 in local mode, :8080 with API keys")
	fs.StringVar(&c.dataDir, "data-dir", env("TRELLIS_DATA_DIR", defaultDataDir(getenv)), "directory of the SQLite database (TRELLIS_DATA_DIR)")
	fs.StringVar(&c.databaseURL, "database-url", env("DATABASE_URL", ""), "PostgreSQL URL; when set, used instead of SQLite (DATABASE_URL)")
	fs.StringVar(&keys, "api-keys", env("TRELLIS_API_KEYS", ""), "key:user pairs, comma-separated; none means local mode (TRELLIS_API_KEYS)")
	fs.StringVar(&authMode, "auth", env("TRELLIS_AUTH", ""), "local (no authentication, loopback only) or keys (API keys: --api-keys and those issued with trellis keys); default keys when --api-keys lists any, else local (TRELLIS_AUTH)")
	fs.StringVar(&c.oidc.Issuer, "oidc-issuer", env("TRELLIS_OIDC_ISSUER", ""), "OpenID Connect issuer URL whose bearer JWTs authenticate users, beside API keys (TRELLIS_OIDC_ISSUER)")
	fs.StringVar(&c.oidc.Audience, "oidc-audience", env("TRELLIS_OIDC_AUDIENCE", ""), "the audience (client id) the issuer's tokens must name; required with --oidc-issuer (TRELLIS_OIDC_AUDIENCE)")
	fs.StringVar(&c.oidc.UserClaim, "oidc-user-claim", env("TRELLIS_OIDC_USER_CLAIM", "sub"), "the token claim that holds the user id (TRELLIS_OIDC_USER_CLAIM)")
	fs.StringVar(&c.signIn.ClientSecret, "oidc-client-secret", env("TRELLIS_OIDC_CLIENT_SECRET", ""), "the client secret the issuer gave this service, for the page's sign-in; empty for a public client, which PKCE protects (TRELLIS_OIDC_CLIENT_SECRET)")
	fs.StringVar(&c.signIn.RedirectURL, "oidc-redirect-url", env("TRELLIS_OIDC_REDIRECT_URL", ""), "this service's public URL of /auth/callback, as registered at the issuer, under the path prefix a reverse proxy strips if any; set, the page signs people in through the issuer (TRELLIS_OIDC_REDIRECT_URL)")
	fs.StringVar(&sessionTTL, "session-ttl", env("TRELLIS_SESSION_TTL", signin.DefaultSessionTTL.String()), "how long a sign-in on the page lasts (TRELLIS_SESSION_TTL)")
	fs.StringVar(&oidcAlgs, "oidc-algorithms", env("TRELLIS_OIDC_ALGORITHMS", ""), "signing algorithms accepted, comma-separated; default those the issuer's discovery lists (TRELLIS_OIDC_ALGORITHMS)")
	fs.StringVar(&admins, "admin-users", env("TRELLIS_ADMIN_USERS", ""), "users (as --api-keys names them) who may read what spans every user, comma-separated; in local mode the local user (TRELLIS_ADMIN_USERS)")
	fs.StringVar(&c.mcpConfig, "mcp-config", env("TRELLIS_MCP_CONFIG", ""), "MCP servers file (TRELLIS_MCP_CONFIG)")
	fs.StringVar(&approval, "approval-tools", env("TRELLIS_APPROVAL_TOOLS", ""), "tools that always need approval, comma-separated (TRELLIS_APPROVAL_TOOLS)")
	fs.StringVar(&approvalTimeout, "approval-timeout", env("TRELLIS_APPROVAL_TIMEOUT", "0"), "how long an approval waits for an answer before --approval-expiry decides it, unless its MCP server's approvalTimeout says otherwise; 0 waits for ever (TRELLIS_APPROVAL_TIMEOUT)")
	fs.StringVar(&approvalExpiry, "approval-expiry", env("TRELLIS_APPROVAL_EXPIRY", "reject"), "what an approval's deadline decides: reject (the agent is told it expired), approve, or cancel (the run) (TRELLIS_APPROVAL_EXPIRY)")
	fs.StringVar(&questionTimeout, "question-timeout", env("TRELLIS_QUESTION_TIMEOUT", "0"), "how long a tool's question to the user (an elicitation) waits for an answer before --question-expiry decides it, unless its MCP server's elicitationTimeout says otherwise; 0 waits for ever (TRELLIS_QUESTION_TIMEOUT)")
	fs.StringVar(&questionExpiry, "question-expiry", env("TRELLIS_QUESTION_EXPIRY", "decline"), "what a question's deadline decides: decline (the tool hears the user declined) or cancel (the run) (TRELLIS_QUESTION_EXPIRY)")
	fs.StringVar(&clarifyTimeout, "clarification-timeout", env("TRELLIS_CLARIFICATION_TIMEOUT", "0"), "how long the agent's clarifying question waits for the user's answer before --clarification-expiry decides it; 0 waits for ever (TRELLIS_CLARIFICATION_TIMEOUT)")
	fs.StringVar(&clarifyExpiry, "clarification-expiry", env("TRELLIS_CLARIFICATION_EXPIRY", "continue"), "what a clarifying question's deadline decides: continue (the agent goes on without an answer, and says so) or cancel (the run) (TRELLIS_CLARIFICATION_EXPIRY)")
	fs.StringVar(&uncertainTimeout, "uncertain-call-timeout", env("TRELLIS_UNCERTAIN_CALL_TIMEOUT", "0"), "how long a call that may have run (found by recovery after a crash) waits for a person's decision before --uncertain-call-expiry decides it; 0 waits for ever (TRELLIS_UNCERTAIN_CALL_TIMEOUT)")
	fs.StringVar(&uncertainExpiry, "uncertain-call-expiry", env("TRELLIS_UNCERTAIN_CALL_EXPIRY", "skip"), "what an uncertain call's deadline decides: skip (treated as not run) or fail; never retry, which only a person may decide (TRELLIS_UNCERTAIN_CALL_EXPIRY)")
	fs.StringVar(&cors, "cors-origins", env("TRELLIS_CORS_ORIGINS", ""), "origins browsers may call the API from, comma-separated, or * (TRELLIS_CORS_ORIGINS)")
	fs.StringVar(&interrupt, "interrupt-after", env("TRELLIS_INTERRUPT_AFTER", "60s"), "how long an open stream waits for an approval before run.interrupted (TRELLIS_INTERRUPT_AFTER)")
	fs.StringVar(&elicitTO, "elicit-timeout", env("TRELLIS_ELICIT_TIMEOUT", "5m"), "how long an open stream waits for the answer to a tool's question before the run parks on it (TRELLIS_ELICIT_TIMEOUT)")
	fs.StringVar(&cancelOnDisconnect, "cancel-on-disconnect", env("TRELLIS_CANCEL_ON_DISCONNECT", "false"), "cancel a run when its client goes away (TRELLIS_CANCEL_ON_DISCONNECT)")
	fs.StringVar(&shutdown, "shutdown-timeout", env("TRELLIS_SHUTDOWN_TIMEOUT", "10s"), "how long shutdown waits for runs to park (TRELLIS_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&jobTimeout, "job-timeout", env("TRELLIS_JOB_TIMEOUT", "5m"), "how long one attempt of a background job (learning, a document's processing, an erasure) may run; a job whose process died is taken again after twice this, at most a minute more (TRELLIS_JOB_TIMEOUT)")
	fs.StringVar(&claim, "claim-interval", env("TRELLIS_CLAIM_INTERVAL", "5s"), "with PostgreSQL, how often to take over runs of processes that are gone (TRELLIS_CLAIM_INTERVAL)")
	fs.StringVar(&unhealthy, "unhealthy-after", env("TRELLIS_UNHEALTHY_AFTER", "60s"), "how long without the database before /healthz fails, 0 or less for never (TRELLIS_UNHEALTHY_AFTER)")
	fs.StringVar(&maxBody, "max-body-bytes", env("TRELLIS_MAX_BODY_BYTES", strconv.Itoa(api.DefaultMaxBodyBytes)), "request body limit (TRELLIS_MAX_BODY_BYTES)")
	fs.StringVar(&maxMsg, "max-message-chars", env("TRELLIS_MAX_MESSAGE_CHARS", strconv.Itoa(runs.DefaultMaxMessageRunes)), "chat message limit (TRELLIS_MAX_MESSAGE_CHARS)")
	fs.StringVar(&rate, "rate-per-minute", env("TRELLIS_RATE_PER_MINUTE", strconv.Itoa(api.DefaultRatePerMinute)), "API requests per user per minute, -1 for no limit (TRELLIS_RATE_PER_MINUTE)")
	fs.StringVar(&burst, "rate-burst", env("TRELLIS_RATE_BURST", strconv.Itoa(api.DefaultBurst)), "API requests a user may make at once (TRELLIS_RATE_BURST)")
	fs.StringVar(&authPerMin, "auth-failures-per-minute", env("TRELLIS_AUTH_FAILURES_PER_MINUTE", strconv.Itoa(api.DefaultAuthFailuresPerMin)), "invalid API keys a client address may send per minute before 429, -1 for no limit (TRELLIS_AUTH_FAILURES_PER_MINUTE)")
	fs.StringVar(&authBurst, "auth-failure-burst", env("TRELLIS_AUTH_FAILURE_BURST", strconv.Itoa(api.DefaultAuthFailureBurst)), "invalid API keys a client address may send at once (TRELLIS_AUTH_FAILURE_BURST)")
	fs.StringVar(&proxies, "trusted-proxies", env("TRELLIS_TRUSTED_PROXIES", ""), "reverse proxies whose X-Forwarded-For names the client, CIDRs or addresses, comma-separated (TRELLIS_TRUSTED_PROXIES)")
	fs.StringVar(&maxRuns, "max-runs-per-user", env("TRELLIS_MAX_RUNS_PER_USER", strconv.Itoa(api.DefaultMaxConcurrentRuns)), "runs a user may have going at once, -1 for no limit (TRELLIS_MAX_RUNS_PER_USER)")
	fs.StringVar(&maxToolResult, "max-tool-result-bytes", env("TRELLIS_MAX_TOOL_RESULT_BYTES", strconv.Itoa(operators.DefaultMaxResultBytes)), "tool results above this are cut, with a note, -1 for no cap (TRELLIS_MAX_TOOL_RESULT_BYTES)")
	fs.StringVar(&wsApprove, "workspace-approve", env("TRELLIS_WORKSPACE_APPROVE", "delete"), "which changes of the agent's workspace files ask a person first, with the change shown as a diff: comma-separated write, edit, delete, or none (TRELLIS_WORKSPACE_APPROVE)")
	fs.StringVar(&wsFileBytes, "workspace-file-bytes", env("TRELLIS_WORKSPACE_FILE_BYTES", strconv.Itoa(workspace.DefaultFileBytes)), "the largest file of the agent's workspace, in bytes (TRELLIS_WORKSPACE_FILE_BYTES)")
	fs.StringVar(&wsScopeBytes, "workspace-scope-bytes", env("TRELLIS_WORKSPACE_SCOPE_BYTES", strconv.Itoa(workspace.DefaultScopeBytes)), "the most bytes one workspace (a conversation's, a user's, a project's) holds, every version of every file counted (TRELLIS_WORKSPACE_SCOPE_BYTES)")
	fs.StringVar(&wsScopeFiles, "workspace-scope-files", env("TRELLIS_WORKSPACE_SCOPE_FILES", strconv.Itoa(workspace.DefaultScopeFiles)), "the most files one workspace holds (TRELLIS_WORKSPACE_SCOPE_FILES)")
	fs.StringVar(&codeTime, "code-time", env("TRELLIS_CODE_TIME", sandbox.DefaultTime.String()), "wall time one run_code program may take (TRELLIS_CODE_TIME)")
	fs.StringVar(&codeMemory, "code-memory-bytes", env("TRELLIS_CODE_MEMORY_BYTES", strconv.Itoa(sandbox.DefaultMemory)), "how far the heap may grow while one run_code program runs, in bytes (TRELLIS_CODE_MEMORY_BYTES)")
	fs.StringVar(&codeOutput, "code-output-bytes", env("TRELLIS_CODE_OUTPUT_BYTES", strconv.Itoa(sandbox.DefaultOutput)), "console output, and separately final value, kept of one run_code program, in bytes; more output stops it (TRELLIS_CODE_OUTPUT_BYTES)")
	fs.StringVar(&codeConcurrent, "code-concurrency", env("TRELLIS_CODE_CONCURRENCY", strconv.Itoa(sandbox.DefaultConcurrent())), "how many run_code programs run at once; a call waits for a slot at most --code-time (TRELLIS_CODE_CONCURRENCY)")
	fs.StringVar(&keepCheckpoints, "keep-checkpoints", env("TRELLIS_KEEP_CHECKPOINTS", "0"), "an hourly job prunes checkpoints, keeping this many newest of each branch and all older ones they still need, and reports trellis_checkpoint_bytes; 0 keeps every checkpoint (TRELLIS_KEEP_CHECKPOINTS)")
	fs.StringVar(&summaryTokens, "summary-tokens", env("TRELLIS_SUMMARY_TOKENS", "4000"), "estimated tokens of a conversation's earlier turns at which the fast model summarises them in the background, for the next turns' prompts; 0 keeps only the extractive summary (TRELLIS_SUMMARY_TOKENS)")
	fs.StringVar(&retentionDays, "retention-days", env("TRELLIS_RETENTION_DAYS", "0"), "conversations no one wrote to for this many days are erased, with their documents and checkpoints, by an hourly job; 0 keeps them for ever (TRELLIS_RETENTION_DAYS)")
	fs.StringVar(&eventRetentionDays, "event-retention-days", env("TRELLIS_EVENT_RETENTION_DAYS", "0"), "the events of runs that ended this many days ago are compacted to their start, answer and end, by an hourly job; 0 keeps them whole (TRELLIS_EVENT_RETENTION_DAYS)")
	fs.StringVar(&docDir, "documents-dir", env("TRELLIS_DOCUMENTS_DIR", ""), "where uploaded documents' files are kept (TRELLIS_DOCUMENTS_DIR); default <data dir>/documents")
	fs.StringVar(&docShared, "documents-shared", env("TRELLIS_DOCUMENTS_SHARED", "false"), "with PostgreSQL, keep documents' files in documents-dir, which every process sharing the database must see, instead of in the database (TRELLIS_DOCUMENTS_SHARED)")
	fs.StringVar(&docMax, "max-document-bytes", env("TRELLIS_MAX_DOCUMENT_BYTES", "1000000"), "largest document accepted, in bytes (TRELLIS_MAX_DOCUMENT_BYTES)")
	fs.StringVar(&docCount, "max-documents", env("TRELLIS_MAX_DOCUMENTS", "5"), "documents a conversation may hold (TRELLIS_MAX_DOCUMENTS)")
	fs.StringVar(&docExtract, "max-extractions", env("TRELLIS_MAX_EXTRACTIONS", strconv.Itoa(runtime.GOMAXPROCS(0))), "documents whose text is read at once; more uploads wait for a turn (TRELLIS_MAX_EXTRACTIONS)")
	fs.StringVar(&durability, "durability", env("TRELLIS_DURABILITY", "boundary"), "when a run writes its checkpoints: boundary (its input, before each call of a tool neither read-only nor idempotent, at a question and at its end; a crash may repeat a model call, never such a tool), sync (every step, before the next), async (every step, while the next runs) or exit (its input and its end; a crash repeats the turn) (TRELLIS_DURABILITY)")
	fs.StringVar(&cogOn, "cognition", env("TRELLIS_COGNITION", "on"), "remember users across conversations and learn in the background: on or off (TRELLIS_COGNITION)")
	fs.StringVar(&cogBudget, "cognition-budget", env("TRELLIS_COGNITION_BUDGET", "100ms"), "how long loading what is remembered of the user may take before the run goes on without it (TRELLIS_COGNITION_BUDGET)")
	fs.StringVar(&memMax, "max-memories", env("TRELLIS_MAX_MEMORIES", "100"), "memories kept per user, the least important pruned first (TRELLIS_MAX_MEMORIES)")
	fs.StringVar(&memTTL, "memory-ttl", env("TRELLIS_MEMORY_TTL", "2160h"), "memories unused this long are pruned (TRELLIS_MEMORY_TTL)")
	fs.StringVar(&learnAfter, "learn-after", env("TRELLIS_LEARN_AFTER", cognition.DefaultLearnAfter.String()), "how long after a turn memory learns from its conversation, from every turn not learned yet: turns that come meanwhile are learned together; 0 learns after each turn (TRELLIS_LEARN_AFTER)")
	fs.StringVar(&learnEvery, "learn-every", env("TRELLIS_LEARN_EVERY", "0"), "memory learns at once every this many turns of a conversation, however soon they come; 0 leaves it to learn-after (TRELLIS_LEARN_EVERY)")
	fs.StringVar(&subAgents, "subagents", env("TRELLIS_SUBAGENTS", ""), "sub-agents file (JSON) the supervisor may delegate to with the task tool (TRELLIS_SUBAGENTS)")
	fs.StringVar(&systemPrompt, "system-prompt-file", env("TRELLIS_SYSTEM_PROMPT_FILE", ""), "file whose text opens every model call of the agent and of its sub-agents that set none, instead of the built-in prompt (TRELLIS_SYSTEM_PROMPT_FILE)")
	fs.StringVar(&monthlyQuota, "monthly-token-quota", env("TRELLIS_MONTHLY_TOKEN_QUOTA", "0"), "model tokens a user's runs may spend in a UTC month; a run is refused once they are spent (429 quota_exceeded), and one started before gets what is left as its token budget; 0 for no quota (TRELLIS_MONTHLY_TOKEN_QUOTA)")
	fs.StringVar(&budgetTokens, "budget-tokens", env("TRELLIS_BUDGET_TOKENS", "0"), "model tokens a run may spend, its sub-agents' included; 0 for no limit (TRELLIS_BUDGET_TOKENS)")
	fs.StringVar(&budgetCalls, "budget-tool-calls", env("TRELLIS_BUDGET_TOOL_CALLS", "0"), "tool calls a run may make, its sub-agents' included; 0 for no limit (TRELLIS_BUDGET_TOOL_CALLS)")
	fs.StringVar(&budgetTime, "budget-time", env("TRELLIS_BUDGET_TIME", "0s"), "wall time a run may take; 0 for no limit (TRELLIS_BUDGET_TIME)")
	fs.StringVar(&webhooksFile, "webhooks-file", env("TRELLIS_WEBHOOKS_FILE", ""), "webhooks file (JSON): the endpoints told of approvals asked and expired, uncertain calls and runs completed or failed, with their secrets (TRELLIS_WEBHOOKS_FILE)")
	fs.StringVar(&logLevel, "log-level", env("TRELLIS_LOG_LEVEL", "info"), "debug, info, warn or error (TRELLIS_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}

	var errs []error
	var err error
	if c.keys, err = middleware.ParseKeys(keys); err != nil {
		errs = append(errs, err)
	}
	c.oidc.Algorithms = list(oidcAlgs)
	errs = append(errs, checkOIDC(c.oidc)...)
	switch authMode {
	case "":
		c.auth = len(c.keys) > 0 || c.oidc.Issuer != ""
	case "keys":
		c.auth = true
	case "local":
		if len(c.keys) > 0 || c.oidc.Issuer != "" {
			errs = append(errs, errors.New("auth local: --api-keys or --oidc-issuer is set, which local mode would not check"))
		}
	default:
		errs = append(errs, fmt.Errorf("auth %q: want local or keys", authMode))
	}
	c.approvalTools, c.corsOrigins, c.trustedProxies = list(approval), list(cors), list(proxies)
	c.admins = list(admins)
	for _, a := range c.admins {
		if len(c.keys) > 0 && authMode != "keys" && c.oidc.Issuer == "" && !slices.Contains(slices.Collect(maps.Values(c.keys)), a) {
			errs = append(errs, fmt.Errorf("admin-users: %q is the user of no API key", a))
		}
	}
	dur := func(name, v string, d *time.Duration) {
		if *d, err = time.ParseDuration(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	dur("interrupt-after", interrupt, &c.interruptAfter)
	dur("elicit-timeout", elicitTO, &c.elicitTimeout)
	expiry := func(kind events.PendingKind, name, timeout, outcome string, e *operators.Expiry) {
		dur(name+"-timeout", timeout, &e.Timeout)
		if e.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s-timeout: %s is negative (0 waits for ever)", name, e.Timeout))
		}
		var err error
		if e.Outcome, err = events.ParseExpiryOutcome(kind, outcome); err != nil {
			errs = append(errs, fmt.Errorf("%s-expiry: %w", name, err))
		}
	}
	expiry(events.PendingApproval, "approval", approvalTimeout, approvalExpiry, &c.approvalExpiry)
	expiry(events.PendingElicitation, "question", questionTimeout, questionExpiry, &c.questionExpiry)
	expiry(events.PendingClarification, "clarification", clarifyTimeout, clarifyExpiry, &c.clarifyExpiry)
	expiry(events.PendingUncertainCall, "uncertain-call", uncertainTimeout, uncertainExpiry, &c.uncertainExpiry)
	dur("shutdown-timeout", shutdown, &c.shutdownTimeout)
	dur("session-ttl", sessionTTL, &c.signIn.SessionTTL)
	errs = append(errs, checkSignIn(c.oidc, c.signIn)...)
	dur("job-timeout", jobTimeout, &c.jobTimeout)
	if c.jobTimeout <= 0 {
		errs = append(errs, fmt.Errorf("job-timeout: %q is not a positive duration", jobTimeout))
	}
	dur("claim-interval", claim, &c.claimInterval)
	dur("code-time", codeTime, &c.code.Time)
	dur("unhealthy-after", unhealthy, &c.unhealthyAfter)
	if c.unhealthyAfter <= 0 {
		c.unhealthyAfter = -1 // never; api.Config takes 0 for its default
	}
	if c.interruptAfter == 0 {
		// 0 has always meant the default here; the run service would
		// park at once.
		c.interruptAfter = defaultInterruptAfter
	}
	num := func(name, v string, n *int) {
		if *n, err = strconv.Atoi(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a number", name, v))
		}
	}
	var body int
	num("max-body-bytes", maxBody, &body)
	c.limits.MaxBodyBytes = int64(body)
	num("max-message-chars", maxMsg, &c.maxMessage)
	num("rate-per-minute", rate, &c.limits.RatePerMinute)
	num("rate-burst", burst, &c.limits.Burst)
	num("max-runs-per-user", maxRuns, &c.limits.MaxConcurrentRunsPerUser)
	if c.limits.MaxConcurrentRunsPerUser == 0 {
		// As for the other limits, 0 is the default, not "no cap" as the
		// run service would read it.
		c.limits.MaxConcurrentRunsPerUser = api.DefaultMaxConcurrentRuns
	}
	num("auth-failures-per-minute", authPerMin, &c.limits.AuthFailuresPerMinute)
	num("auth-failure-burst", authBurst, &c.limits.AuthFailureBurst)
	num("max-tool-result-bytes", maxToolResult, &c.maxToolResult)
	num("summary-tokens", summaryTokens, &c.summaryTokens)
	var codeMem int
	num("code-memory-bytes", codeMemory, &codeMem)
	c.code.Memory = int64(codeMem)
	num("code-output-bytes", codeOutput, &c.code.Output)
	num("code-concurrency", codeConcurrent, &c.code.Concurrent)
	// 0 would mean run_code's default, not "nothing": say so rather than
	// give the default silently.
	for _, l := range []struct {
		name string
		v    int64
	}{{"code-time", int64(c.code.Time)}, {"code-memory-bytes", c.code.Memory}, {"code-output-bytes", int64(c.code.Output)},
		{"code-concurrency", int64(c.code.Concurrent)}} {
		if l.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", l.name))
		}
	}
	num("keep-checkpoints", keepCheckpoints, &c.keepCheckpoints)
	if c.keepCheckpoints < 0 {
		errs = append(errs, fmt.Errorf("keep-checkpoints: %d is negative (0 keeps every checkpoint)", c.keepCheckpoints))
	}
	num("retention-days", retentionDays, &c.retentionDays)
	if c.retentionDays < 0 {
		errs = append(errs, fmt.Errorf("retention-days: %d is negative (0 keeps conversations for ever)", c.retentionDays))
	}
	num("event-retention-days", eventRetentionDays, &c.eventRetentionDays)
	if c.eventRetentionDays < 0 {
		errs = append(errs, fmt.Errorf("event-retention-days: %d is negative (0 keeps events whole)", c.eventRetentionDays))
	}
	if c.summaryTokens < 0 {
		errs = append(errs, fmt.Errorf("summary-tokens: %d is negative (0 keeps only the extractive summary)", c.summaryTokens))
	}
	if c.monthlyQuota, err = strconv.ParseInt(monthlyQuota, 10, 64); err != nil || c.monthlyQuota < 0 {
		errs = append(errs, fmt.Errorf("monthly-token-quota: %q is not a whole number, 0 or more (0 is no quota)", monthlyQuota))
	}
	num("budget-tokens", budgetTokens, &c.budget.Tokens)
	num("budget-tool-calls", budgetCalls, &c.budget.ToolCalls)
	dur("budget-time", budgetTime, &c.budget.Time)
	if c.budget.Tokens < 0 || c.budget.ToolCalls < 0 || c.budget.Time < 0 {
		errs = append(errs, errors.New("budget: limits must not be negative (0 is no limit)"))
	}
	if subAgents != "" {
		if data, err := os.ReadFile(subAgents); err != nil {
			errs = append(errs, fmt.Errorf("subagents: %w", err))
		} else if c.subAgents, err = nodes.ParseSubAgents(data); err != nil {
			errs = append(errs, fmt.Errorf("subagents %s: %w", subAgents, err))
		}
	}
	if systemPrompt != "" {
		if c.systemPrompt, err = readSystemPrompt(systemPrompt); err != nil {
			errs = append(errs, fmt.Errorf("system-prompt-file %s: %w", systemPrompt, err))
		}
	}
	if webhooksFile != "" {
		if data, err := os.ReadFile(webhooksFile); err != nil {
			errs = append(errs, fmt.Errorf("webhooks-file: %w", err))
		} else if c.webhooks, err = webhooks.ParseSettings(data); err != nil {
			errs = append(errs, fmt.Errorf("webhooks-file %s: %w", webhooksFile, err))
		} else if rescue := rescueAfter(c.jobTimeout); c.webhooks.JobTimeout() >= rescue {
			errs = append(errs, fmt.Errorf("webhooks-file %s: an attempt may take %s, and a job of a process that died is taken again after %s (job-timeout %s): raise job-timeout or lower the webhooks' timeout",
				webhooksFile, c.webhooks.JobTimeout(), rescue, c.jobTimeout))
		}
	}
	if c.maxToolResult == 0 {
		errs = append(errs, errors.New("max-tool-result-bytes: 0 would cut every result; give -1 for no cap"))
	}
	if c.cancelOnDisconnect, err = strconv.ParseBool(cancelOnDisconnect); err != nil {
		errs = append(errs, fmt.Errorf("cancel-on-disconnect: %q is not true or false", cancelOnDisconnect))
	}
	if c.durability, err = graph.ParseDurability(durability); err != nil {
		errs = append(errs, fmt.Errorf("durability: %w", err))
	}
	if err := c.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log-level: %w", err))
	}
	if docDir == "" {
		docDir = documentsDefaultDir(c.dataDir)
	}
	errs = append(errs, parseDocuments(&c.documents, docDir, docShared, docMax, docCount, docExtract, getenv)...)
	errs = append(errs, parseWorkspace(&c.workspace, wsApprove, wsFileBytes, wsScopeBytes, wsScopeFiles)...)
	errs = append(errs, parseCognition(&c.cognition, cognitionFlags{on: cogOn, budget: cogBudget, maxMemories: memMax, ttl: memTTL,
		learnAfter: learnAfter, learnEvery: learnEvery})...)
	if c.addr == "" {
		c.addr = "127.0.0.1:8080"
		if c.auth {
			c.addr = ":8080"
		}
	}
	if !c.auth && !loopback(c.addr) {
		errs = append(errs, fmt.Errorf("addr %s: local mode (no API keys) serves without authentication, so it binds to a loopback address only; set TRELLIS_API_KEYS, or TRELLIS_AUTH=keys with keys issued by trellis keys, to serve on %s", c.addr, c.addr))
	}
	return c, errors.Join(errs...)
}

// maxSystemPromptBytes bounds the operator's system prompt: it opens
// every model call, so each byte is paid for on every call.
const maxSystemPromptBytes = 64 << 10

// readSystemPrompt reads the operator's system prompt: text, not empty,
// at most maxSystemPromptBytes.
func readSystemPrompt(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSystemPromptBytes+1))
	switch {
	case err != nil:
		return "", err
	case len(b) > maxSystemPromptBytes:
		return "", fmt.Errorf("the file is larger than %d bytes, the most a system prompt may be", maxSystemPromptBytes)
	case !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0:
		return "", errors.New("the file is not text (UTF-8 without NUL bytes)")
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", errors.New("the file is empty")
	}
	return p, nil
}

func list(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "trellis")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "trellis")
	}
	return "trellis-data"
}

// loopback reports whether addr's host is a loopback address or name.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serve runs the chat service until SIGINT or SIGTERM, then shuts down
// gracefully: it stops accepting, parks runs at their next checkpoint and
// ends streams, within the shutdown timeout.
func serve(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseServe(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "trellis serve: %v\n", err)
		return 2
	}
	log := serveLogger(stderr, cfg.logLevel)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serveUntil(ctx, cfg, getenv, stdout, log); err != nil {
		log.LogAttrs(context.Background(), slog.LevelError, "trellis serve failed", slog.Any("error", err))
		fmt.Fprintf(stderr, "trellis serve: %v\n", err)
		return 1
	}
	return 0
}

// serveLogger is serve's logger: JSON lines on w from level up.
func serveLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// serveUntil serves until ctx ends: it listens, assembles the service,
// recovers the runs a previous process left, swaps the API in, and shuts
// down in order.
func serveUntil(ctx context.Context, cfg serveConfig, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	// Listen first: /healthz answers and /readyz says 503 while storage
	// opens and migrates.
	front, err := listen(cfg.addr, log)
	if err != nil {
		return err
	}
	var cleanup closers
	defer cleanup.run()
	svc, err := assemble(ctx, cfg, getenv, log, &cleanup)
	if err != nil {
		front.close()
		return err
	}
	recoverRuns(ctx, svc.srv, log)
	front.serve(svc.srv.Handler())
	fmt.Fprintln(stdout, startLine(front.ln.Addr().String(), svc.storage, svc.models, cfg, svc.mcpServers)+" · documents "+svc.documents+" · memory "+svc.cognition+" · titles "+svc.titles)

	select {
	case <-ctx.Done():
	case err := <-front.served:
		return err
	}
	shutdown(front, svc.srv, cfg.shutdownTimeout, log)
	return nil
}

// front is the HTTP server, listening from the start: it answers with
// notReady until serve swaps the API in.
type front struct {
	ln      net.Listener
	hs      *http.Server
	handler atomic.Pointer[http.Handler]
	served  chan error
}

// listen opens the address and serves notReady on it.
func listen(addr string, log *slog.Logger) (*front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &front{ln: ln, served: make(chan error, 1)}
	starting := http.Handler(http.HandlerFunc(notReady))
	f.handler.Store(&starting)
	f.hs = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*f.handler.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute, // streams and sync chat lift it per response
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { f.served <- f.hs.Serve(ln) }()
	return f, nil
}

// serve swaps h in for notReady.
func (f *front) serve(h http.Handler) { f.handler.Store(&h) }

// close stops serving at once.
func (f *front) close() {
	_ = f.hs.Close()
	<-f.served
}

// closers are what serveUntil closes as it returns, last opened first.
type closers []func()

func (c *closers) add(f func()) { *c = append(*c, f) }

func (c *closers) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// app is the service assembled: the API server and what the start line
// tells of it.
type app struct {
	srv        *api.Server
	storage    string
	models     *llm.Registry
	mcpServers int // enabled
	documents  string
	cognition  string
	titles     string
}

// assemble opens storage, the models and the tools, joins the cluster on
// PostgreSQL, and builds the API server over them; what it opened is
// closed by cleanup.
func assemble(ctx context.Context, cfg serveConfig, getenv func(string) string, log *slog.Logger, cleanup *closers) (app, error) {
	tracer, err := startTracing(ctx, getenv, log, cleanup)
	if err != nil {
		return app{}, err
	}
	st, saver, storage, closeStorage, err := openStorage(ctx, cfg)
	if err != nil {
		return app{}, err
	}
	cleanup.add(closeStorage)
	modelCfg, err := llm.ConfigFromEnv(getenv)
	if err != nil {
		return app{}, err
	}
	modelCfg.Tracer = tracer
	models, err := llm.NewRegistry(modelCfg)
	if err != nil {
		return app{}, err
	}
	collector := metrics.New()
	tools, err := buildTools(ctx, cfg, models, collector, log, cleanup)
	if err != nil {
		return app{}, err
	}
	// Trellis' own tools over MCP at /mcp, as the user the API
	// authenticated.
	mcpServer := mcp.NewServer(tools.provider, mcp.ServerOptions{Name: "trellis", Version: version(), Export: tools.exported, Logger: log,
		CallInfo: func(ctx context.Context) operators.Call { return operators.Call{UserID: runs.UserFrom(ctx)} }})
	mcpHandler := mcp.HTTPHandler(mcpServer, mcp.HTTPOptions{Logger: log})

	owner := newOwner()
	cluster, notices, err := joinCluster(ctx, st, owner, cleanup)
	if err != nil {
		return app{}, err
	}
	ws := jobs.NewWorkers()
	docs, docDesc, err := openDocuments(ctx, cfg, st, models, ws, log, cleanup)
	if err != nil {
		return app{}, err
	}
	cog, cogDesc, err := openCognition(ctx, cfg, st, models, collector, ws, log, cleanup)
	if err != nil {
		return app{}, err
	}
	rec, ok := st.(eraseRecord)
	if !ok {
		return app{}, errors.New("erasure: the store cannot erase users")
	}
	erasure, scrub := newEraser(ws), newScrubber(ws)
	expiry := openExpirer(ws, log)
	titles, titleDesc, err := openTitler(ctx, models, ws, log)
	if err != nil {
		return app{}, err
	}
	var window nodes.Window
	var sums *summaries
	if cfg.summaryTokens > 0 {
		window.SummarizeAt = cfg.summaryTokens
		if sums, err = openSummaries(models, saver, window, ws, log); err != nil {
			return app{}, err
		}
	}
	hooks, err := openWebhooks(cfg, st, ws, log)
	if err != nil {
		return app{}, err
	}
	kept, periodic := newRetention(ws, days(cfg.retentionDays), days(cfg.eventRetentionDays))
	periodic = append(periodic, newCheckpointPrune(ws, cfg, saver, collector, log)...)
	if docs != nil {
		periodic = append(periodic, docs.Periodic()...)
	}
	if cog != nil {
		periodic = append(periodic, cog.Periodic()...)
	}
	queue, err := openQueue(ctx, cfg, ws, periodic, log, cleanup)
	if err != nil {
		return app{}, err
	}
	if docs != nil {
		docs.Attach(queue)
	}
	if cog != nil {
		cog.Attach(queue)
	}
	if sums != nil {
		sums.Attach(queue)
		window.AskSummary = sums.ask
	}
	agent := nodes.Options{Durability: cfg.durability, SubAgents: cfg.subAgents, Budget: cfg.budget, Tracer: tracer, Window: window,
		SystemPrompt: cfg.systemPrompt}
	if docs != nil {
		agent.Documents = documentSummaries{docs}
		if rec, ok := st.(doctools.Store); ok {
			// The agent's document tools, in the one provider beside the
			// built-in ones.
			if err := tools.local.Add(doctools.New(doctools.Config{Store: rec})...); err != nil {
				return app{}, err
			}
		}
	}
	// The agent's workspace keeps its bytes in the documents' file store;
	// without it, run_code's programs get no files.
	work := openWorkspace(cfg, st, docs)
	code := sandbox.Tool(cfg.code, nil)
	if work != nil {
		wcfg := workspace.ToolConfig{Approve: cfg.workspace.approve,
			Index: func(ctx context.Context, user, conversation, filename string, data []byte) (store.Document, error) {
				return docs.Upload(ctx, ingest.Upload{UserID: user, ConversationID: conversation, Filename: filename, Data: data})
			}, Document: docs.Content}
		if err := tools.local.Add(work.Tools(wcfg)...); err != nil {
			return app{}, err
		}
		code = work.CodeTool(cfg.code, wcfg)
	}
	if err := tools.local.Add(code); err != nil {
		return app{}, err
	}
	if cog != nil {
		agent.Cognition, agent.Hooks.Learn = cog.ContextText, learnHook(cog, log)
		// The agent waits for its context loaders (memory and document
		// summaries alike) as long as the memory's budget.
		agent.ContextTimeout = cfg.cognition.budget
		mem := memtools.New(cog)
		if err := tools.local.Add(mem...); err != nil {
			return app{}, err
		}
		for _, t := range mem {
			agent.MemoryTools = append(agent.MemoryTools, t.Spec().Name)
		}
	}
	rcfg := runs.Config{
		Store: st, Models: models, Tools: tools.provider, Checkpointer: saver, Agent: agent,
		ElicitTimeout:  cfg.elicitTimeout,
		InterruptAfter: cfg.interruptAfter, CancelOnDisconnect: cfg.cancelOnDisconnect, MaxRunsPerUser: cfg.limits.MaxConcurrentRunsPerUser,
		MonthlyTokenQuota: cfg.monthlyQuota,
		MaxMessageRunes:   cfg.maxMessage,
		Logger:            log, Owner: owner, Cluster: cluster, Notices: notices, ClaimInterval: cfg.claimInterval, Metrics: collector,
	}
	if docs != nil {
		rcfg.DeleteFiles = docs.DeleteConversationFiles
	}
	// Deleting a conversation or a user empties the write-ahead log of
	// every SQLite file of the data directory: the record's, the
	// checkpoints' and the queue's.
	var wals walTruncaters
	for _, db := range []any{st, saver, queue} {
		if w, ok := db.(walTruncater); ok {
			wals = append(wals, w)
		}
	}
	scrub.wire(wals, queue, log)
	rcfg.Scrub = scrub.scrub
	// A process that died between a delete and its scrub left the
	// deleted text in a log: the next one empties them as it starts.
	if err := scrub.scrub(ctx); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "cannot empty the write-ahead logs", slog.String("error", err.Error()))
	}
	if titles != nil {
		rcfg.Title = titles.enqueue
	}
	rcfg.ScheduleExpiry = expiry.schedule
	rcfg.ClarificationExpiry, rcfg.UncertainCallExpiry = cfg.clarifyExpiry, cfg.uncertainExpiry
	svc, err := runs.New(rcfg)
	if err != nil {
		return app{}, err
	}
	if titles != nil {
		titles.wire(queue, svc)
	}
	erasure.wire(queue, svc, rec, docs, work, cog, wals, log)
	expiry.wire(queue, svc)
	if kept != nil {
		kept.wire(svc, st, log)
	}
	issued, err := issuedKeys(ctx, cfg, st, log)
	if err != nil {
		return app{}, err
	}
	var tokens middleware.TokenUser
	if cfg.oidc.Issuer != "" {
		if tokens, err = middleware.NewOIDC(ctx, cfg.oidc); err != nil {
			return app{}, err
		}
	}
	var signIn *signin.SignIn
	if cfg.signIn.RedirectURL != "" {
		sessions, ok := st.(store.Sessions)
		if !ok {
			return app{}, errors.New("the store keeps no sessions")
		}
		sc := cfg.signIn
		sc.Issuer, sc.ClientID, sc.UserClaim, sc.Algorithms, sc.Sessions = cfg.oidc.Issuer, cfg.oidc.Audience, cfg.oidc.UserClaim, cfg.oidc.Algorithms, sessions
		if signIn, err = signin.New(ctx, sc); err != nil {
			return app{}, err
		}
	}
	if err := startWebhooks(ctx, hooks, queue, cleanup); err != nil {
		return app{}, err
	}
	srv, err := api.New(api.Config{
		Runs: svc, Store: st, Tools: tools.provider, Documents: docs, Cognition: cog, Erasure: erasure, Webhooks: hooks,
		Keys: cfg.keys, IssuedKeys: issued, Tokens: tokens, OIDCIssuer: cfg.oidc.Issuer, SignIn: signIn, Admins: cfg.admins, Limits: cfg.limits, CORSOrigins: cfg.corsOrigins, TrustedProxies: cfg.trustedProxies,
		ShutdownTimeout: cfg.shutdownTimeout, UnhealthyAfter: cfg.unhealthyAfter, Version: version(), Logger: log, Metrics: collector,
		Ready: tools.ready, MCP: mcpHandler, Web: web.Handler(),
		Workspace: apiWorkspace(work), FileLinkKey: fileLinkKey(cfg.documents.key),
	})
	if err != nil {
		return app{}, err
	}
	return app{srv: srv, storage: storage, models: models, mcpServers: tools.enabled, documents: docDesc, cognition: cogDesc,
		titles: titleDesc}, nil
}

// toolset is every tool source behind one provider.
type toolset struct {
	provider *operators.Provider
	local    *operators.Registry // the local tools, the provider's
	ready    func() error        // required MCP servers are up; nil without MCP
	exported []string            // MCP tools served again at /mcp
	enabled  int                 // MCP servers configured and enabled
}

// buildTools makes the provider over the local tools, the operators and
// the configured MCP servers, and starts those.
func buildTools(ctx context.Context, cfg serveConfig, models *llm.Registry, metrics *metrics.Collector, log *slog.Logger, cleanup *closers) (toolset, error) {
	local := operators.NewRegistry()
	ops := operators.NewOperatorRegistry(nil) // operators use the run's model
	if err := operators.RegisterBuiltinOperators(ops); err != nil {
		return toolset{}, err
	}
	pcfg := operators.ProviderConfig{Local: local, Operators: ops, OnBreakerChange: metrics.BreakerChanged, Logger: log,
		Approval: operators.ApprovalPolicy{Tools: cfg.approvalTools, Expiry: cfg.approvalExpiry}, ElicitationExpiry: cfg.questionExpiry,
		MaxResultBytes: cfg.maxToolResult}
	var mcpServers []mcp.ServerConfig
	if cfg.mcpConfig != "" {
		mc, err := mcp.LoadConfig(cfg.mcpConfig)
		if err != nil {
			return toolset{}, err
		}
		for _, w := range mc.Warnings {
			log.LogAttrs(ctx, slog.LevelWarn, "MCP config", slog.String("warning", w))
		}
		mcpServers = mc.Servers
		pcfg.SourceResilience = mc.SourceResilience(operators.RemoteToolDefaults())
	}
	t := toolset{provider: operators.NewProvider(pcfg), local: local}
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{
		Info:  operators.SelfInfo{Name: "Trellis", Version: version(), Model: models.Default().ID},
		Tools: t.provider, Operators: ops,
	})...)
	if len(mcpServers) == 0 {
		return t, nil
	}
	mgr, err := mcp.NewManager(mcp.ManagerConfig{Servers: mcpServers, Provider: t.provider, Logger: log})
	if err != nil {
		return toolset{}, err
	}
	if err := mgr.Start(ctx); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "some MCP servers could not be added", slog.Any("error", err))
	}
	cleanup.add(func() { _ = mgr.Close() })
	t.ready, t.exported = mgr.Ready, mgr.Exported()
	for _, s := range mcpServers {
		if !s.Disabled {
			t.enabled++
		}
	}
	return t, nil
}

// joinCluster makes this process one of several sharing a PostgreSQL
// database: it shows itself alive and takes notices as owner until it
// has stopped (the listener is closed after Shutdown has parked the
// runs, which the others then take over). The run service takes the
// session again if the database drops it. On SQLite it does nothing:
// the process is alone with its store.
func joinCluster(ctx context.Context, st store.Store, owner string, cleanup *closers) (runs.Cluster, runs.Notices, error) {
	pg, ok := st.(*pgstore.Store)
	if !ok {
		return nil, nil, nil
	}
	l, err := pg.Listen(ctx, owner)
	if err != nil {
		return nil, nil, err
	}
	cleanup.add(func() { _ = l.Close() })
	return pg, l, nil
}

// newOwner names this process in the runs it starts: host:pid:random,
// unique per process start, so that the next process tells the runs
// this one left (and, in a cluster, the others tell its runs) from its
// own.
func newOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), ids.Random("", 4))
}

// recoverRuns continues the runs a previous process left (see
// api.Server.Recover).
func recoverRuns(ctx context.Context, srv *api.Server, log *slog.Logger) {
	recovered, err := srv.Recover(ctx)
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "some runs could not be recovered", slog.Any("error", err))
	}
	if recovered > 0 {
		log.LogAttrs(ctx, slog.LevelInfo, "recovered runs", slog.Int("runs", recovered))
	}
}

// shutdown stops accepting, parks the runs and ends the streams within
// timeout, then closes what connections remain.
func shutdown(f *front, srv *api.Server, timeout time.Duration, log *slog.Logger) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "shutting down", slog.Duration("timeout", timeout))
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() { _ = f.hs.Shutdown(sctx) }() // stop accepting now; wait for the streams below to end
	if err := srv.Shutdown(sctx); err != nil {
		log.LogAttrs(sctx, slog.LevelWarn, "shutdown", slog.Any("error", err))
	}
	select {
	case <-f.served:
		_ = f.hs.Close() // connections Shutdown left behind, if any
	case <-sctx.Done():
		f.close()
	}
	log.LogAttrs(context.Background(), slog.LevelInfo, "stopped")
}

// notReady answers while the server starts.
func notReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/healthz" {
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
		return
	}
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"error":{"code":"not_ready","message":"the server is starting: storage is opening and migrating"}}`+"\n")
}

// openStorage opens the store and the checkpointer: in one PostgreSQL
// database at DATABASE_URL, or in two SQLite files of the data directory
// (trellis.db and checkpoints.db). SQLite has one writer per file, so two
// files let the record and the checkpoints commit side by side instead of
// waiting for each other. Both migrate as they open.
func openStorage(ctx context.Context, cfg serveConfig) (store.Store, graph.Checkpointer, string, func(), error) {
	if cfg.databaseURL != "" {
		pool, err := pgxpool.New(ctx, cfg.databaseURL)
		if err != nil {
			return nil, nil, "", nil, fmt.Errorf("DATABASE_URL: %w", err)
		}
		st, err := pgstore.New(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, nil, "", nil, err
		}
		cpPool, err := checkpointPool(ctx, cfg.databaseURL)
		if err != nil {
			pool.Close()
			return nil, nil, "", nil, err
		}
		closePools := func() {
			cpPool.Close()
			pool.Close()
		}
		saver, err := postgres.New(ctx, cpPool)
		if err != nil {
			closePools()
			return nil, nil, "", nil, err
		}
		cc := pool.Config().ConnConfig
		desc := fmt.Sprintf("postgres %s:%d/%s", cc.Host, cc.Port, cc.Database)
		if sp := cc.RuntimeParams["search_path"]; sp != "" {
			desc += " (schema " + sp + ")"
		}
		return st, saver, desc, closePools, nil
	}
	if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
		return nil, nil, "", nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(cfg.dataDir, "trellis.db")
	st, err := sqlitestore.Open(ctx, path)
	if err != nil {
		return nil, nil, "", nil, err
	}
	saver, err := sqlite.Open(ctx, filepath.Join(cfg.dataDir, "checkpoints.db"))
	if err != nil {
		st.Close()
		return nil, nil, "", nil, err
	}
	return st, saver, "sqlite " + path, func() {
		_ = saver.Close()
		_ = st.Close()
	}, nil
}

// checkOIDC checks the OpenID Connect settings: an issuer is an https
// URL (http on a loopback host, for a provider on this machine), with an
// audience.
func checkOIDC(o middleware.OIDCConfig) []error {
	if o.Issuer == "" {
		if o.Audience != "" {
			return []error{errors.New("oidc-audience: set without --oidc-issuer")}
		}
		return nil
	}
	var errs []error
	u, err := url.Parse(o.Issuer)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fmt.Errorf("oidc-issuer %q: want an https URL with no query", o.Issuer))
	case u.Scheme != "https" && !(u.Scheme == "http" && loopback(net.JoinHostPort(u.Hostname(), "0"))):
		errs = append(errs, fmt.Errorf("oidc-issuer %q: want https (http only on a loopback host)", o.Issuer))
	}
	if o.Audience == "" {
		errs = append(errs, errors.New("oidc-audience: required with --oidc-issuer (the client id the issuer knows this service by)"))
	}
	if o.UserClaim == "" {
		errs = append(errs, errors.New("oidc-user-claim: empty"))
	}
	return errs
}

// checkSignIn checks the page's sign-in settings: they need an issuer,
// and the redirect URL is an absolute https URL (http on a loopback host)
// of /auth/callback, under a path prefix or none (see signin.Prefix).
func checkSignIn(o middleware.OIDCConfig, si signin.Config) []error {
	var errs []error
	if si.SessionTTL <= 0 {
		errs = append(errs, fmt.Errorf("session-ttl: %s is not a positive duration", si.SessionTTL))
	}
	if si.RedirectURL == "" {
		if si.ClientSecret != "" {
			errs = append(errs, errors.New("oidc-client-secret: set without --oidc-redirect-url, so nothing would use it"))
		}
		return errs
	}
	if o.Issuer == "" {
		errs = append(errs, errors.New("oidc-redirect-url: set without --oidc-issuer"))
	}
	u, err := url.Parse(si.RedirectURL)
	_, errPath := signin.Prefix(si.RedirectURL)
	switch {
	case err != nil || errPath != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fmt.Errorf("oidc-redirect-url %q: want this service's URL of /auth/callback, such as https://trellis.example.com/auth/callback, "+
			"or https://example.com/trellis/auth/callback behind a reverse proxy that serves it under /trellis, stripping that", si.RedirectURL))
	case u.Scheme != "https" && !(u.Scheme == "http" && loopback(net.JoinHostPort(u.Hostname(), "0"))):
		errs = append(errs, fmt.Errorf("oidc-redirect-url %q: want https (http only on a loopback host), so the session cookie is Secure", si.RedirectURL))
	}
	return errs
}

// issuedKeys is the record of the keys issued in the service when
// requests authenticate, nil in local mode, where a stored key is only
// worth a warning: it checks none.
func issuedKeys(ctx context.Context, cfg serveConfig, st store.Store, log *slog.Logger) (store.Keys, error) {
	keys, ok := st.(store.Keys)
	if !ok {
		return nil, errors.New("the store keeps no API keys")
	}
	if cfg.auth {
		return keys, nil
	}
	if has, err := keys.HasKeys(ctx); err != nil {
		return nil, err
	} else if has {
		log.LogAttrs(ctx, slog.LevelWarn, "keys issued with trellis keys are stored, but local mode checks none; set TRELLIS_AUTH=keys to require them")
	}
	return nil, nil
}

// checkpointPool is the checkpointer's pool on PostgreSQL: its
// transactions commit with synchronous_commit off, unless the URL sets
// it, so a step's checkpoint does not wait for its WAL to reach the
// disk (on this machine class, that wait was most of a sync chat's
// time). Nothing acknowledged is lost by it: what clients are told
// (events, a run's end) commits synchronously on the store's pool, and
// a synchronous commit flushes the WAL up to its own record, every
// checkpoint committed before it included. A crash of the database
// server can lose only checkpoints that no told event follows, and a
// process of Trellis that dies loses none (they are committed).
func checkpointPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if _, set := pc.ConnConfig.RuntimeParams["synchronous_commit"]; !set {
		pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	return pool, nil
}

// startLine is the one line serve prints: where it listens and what it
// chose.
func startLine(addr, storage string, models *llm.Registry, cfg serveConfig, mcpServers int) string {
	var ids []string
	def := models.Default().ID
	for _, m := range models.Models() {
		id := m.ID
		if id == def {
			id += " (default)"
		}
		ids = append(ids, id)
	}
	auth := fmt.Sprintf("local mode, no keys, user %q", middleware.LocalUser)
	if cfg.auth {
		auth = fmt.Sprintf("API keys for %d users and keys issued in the service", countUsers(cfg.keys))
		if cfg.oidc.Issuer != "" {
			auth += ", tokens of " + cfg.oidc.Issuer
			if cfg.signIn.RedirectURL != "" {
				auth += ", sign-in on the page"
			}
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "0.0.0.0"
	}
	return fmt.Sprintf("trellis serve: http://%s · storage %s · models %s · auth %s · mcp %d servers",
		net.JoinHostPort(host, port), storage, strings.Join(ids, ", "), auth, mcpServers)
}

func countUsers(keys map[middleware.APIKey]string) int {
	users := map[string]bool{}
	for _, u := range keys {
		users[u] = true
	}
	return len(users)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
