// Command trellis runs Trellis: the agentic chat service and its tools.
//
// Usage:
//
//	trellis <verb> [flags]
//
// Verbs:
//
//	serve    run the chat service (HTTP API, SSE, web chat, /mcp)
//	mcp      serve Trellis' local tools and operators over MCP on stdin
//	         and stdout, for an MCP client (Claude Desktop, Cursor, an IDE)
//	         that starts trellis as a stdio server
//	keys     create, list and revoke the API keys issued in the service
//	backup   copy the embedded default's databases and document files,
//	         while the server runs, into a new directory
//	restore  copy a backup into a new data directory for serve to start on
//
// Run "trellis <verb> -h" for a verb's flags. Logs go to stderr.
//
// This is the one place the service is wired (serve.go's assemble):
// the store and checkpointer, the model registry, the tool provider and
// MCP servers, the documents and cognition services and the job queue
// they share, their hooks into the agent (document summaries, the
// memory's context loader and learning hook), the erasure of users,
// the cluster, and the run service over all of them. package api is
// then given the finished run service and serves it over HTTP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// stdio is the process's outside world, passed down so tests can replace it.
type stdio struct {
	in     io.Reader
	out    io.Writer
	err    io.Writer
	getenv func(string) string
}

// run dispatches to a verb and returns the exit code: 0 success, 1 failure,
// 2 bad usage. To add a verb, add a case and a run<Verb> function.
func run(ctx context.Context, args []string, sys stdio) int {
	if len(args) == 0 {
		usage(sys.err)
		return 2
	}
	var err error
	switch verb, rest := args[0], args[1:]; verb {
	case "serve":
		return serve(rest, sys.getenv, sys.out, sys.err)
	case "mcp":
		err = runMCP(ctx, rest, sys)
	case "keys":
		err = runKeys(ctx, rest, sys)
	case "backup":
		err = runBackup(ctx, rest, sys)
	case "restore":
		err = runRestore(ctx, rest, sys)
	case "prune":
		err = runPrune(ctx, rest, sys)
	case "help", "-h", "-help", "--help":
		usage(sys.out)
		return 0
	default:
		fmt.Fprintf(sys.err, "trellis: unknown verb %q\n\n", verb)
		usage(sys.err)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(sys.err, "trellis:", err)
		return 2
	case err != nil:
		fmt.Fprintln(sys.err, "trellis:", err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: trellis <verb> [flags]

Verbs:
  serve    run the chat service (HTTP API, SSE, web chat, /mcp)
  mcp      serve Trellis' local tools and operators over MCP on stdin/stdout
  keys     create, list and revoke API keys, without a restart
  backup   copy the embedded default's data, while the server runs, into a new directory
  restore  copy a backup into a new data directory
  prune    remove old checkpoints, keeping what every conversation needs

Run "trellis <verb> -h" for a verb's flags.
`)
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ error }

// newFlags is the flag set of a subcommand (trellis name): its errors
// and its usage, usage and then the flags' defaults, go to the command's
// standard error.
func newFlags(name, usage string, sys stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("trellis "+name, flag.ContinueOnError)
	fs.SetOutput(sys.err)
	fs.Usage = func() {
		fmt.Fprint(sys.err, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a subcommand's arguments: flag.ErrHelp for -h, a
// usageError for a flag it does not take.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}

// newLogger logs text to w at level ("debug", "info", "warn", "error").
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("log level %q: want debug, info, warn or error", level)}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// runMCP serves the local tools and operators (with the offline model) over
// stdio, and the tools of the MCP servers the config file marks "export".
func runMCP(ctx context.Context, args []string, sys stdio) error {
	fs := newFlags("mcp", "Usage: trellis mcp [flags]\n\nServes Trellis' local tools and operators over MCP on stdin and stdout.\n\nFlags:\n", sys)
	configPath := fs.String("mcp-config", sys.getenv("TRELLIS_MCP_CONFIG"),
		"MCP servers `file` (Claude Desktop's mcpServers format); servers with \"export\": true are re-exported (env TRELLIS_MCP_CONFIG)")
	logLevel := fs.String("log-level", envOr(sys.getenv, "TRELLIS_LOG_LEVEL", "info"), "log `level`: debug, info, warn or error (env TRELLIS_LOG_LEVEL)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("mcp: unexpected arguments %q", fs.Args())}
	}
	log, err := newLogger(sys.err, *logLevel)
	if err != nil {
		return err
	}

	var servers []mcp.ServerConfig
	if *configPath != "" {
		cfg, err := mcp.LoadConfig(*configPath)
		if err != nil {
			return err
		}
		for _, w := range cfg.Warnings {
			log.Warn("mcp config: " + w)
		}
		for _, s := range cfg.Servers { // only re-exported servers are of use here
			if s.Export && !s.Disabled {
				servers = append(servers, s)
			}
		}
	}
	res := operators.RemoteToolDefaults()
	ops := operators.NewOperatorRegistry(llm.NewOffline())
	if err := operators.RegisterBuiltinOperators(ops); err != nil {
		return err
	}
	local := operators.NewRegistry()
	provider := operators.NewProvider(operators.ProviderConfig{
		Local: local, Operators: ops, Resilience: res,
		SourceResilience: (&mcp.Config{Servers: servers}).SourceResilience(res), Logger: log,
	})
	info := operators.SelfInfo{Name: "Trellis", Version: version(), Model: llm.OfflineID,
		Capabilities: []string{"arithmetic (calculator)", "the current time", "describing its tools"}}
	if err := local.Add(operators.Builtins(operators.BuiltinConfig{Info: info, Tools: provider, Operators: ops})...); err != nil {
		return err
	}

	mgr, err := mcp.NewManager(mcp.ManagerConfig{Servers: servers, Provider: provider, Logger: log,
		ClientInfo: mcpgo.Implementation{Name: "trellis", Version: version()}})
	if err != nil {
		return err
	}
	defer mgr.Close()
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	srv := mcp.NewServer(provider, mcp.ServerOptions{Name: "trellis", Version: version(), Export: mgr.Exported(), Logger: log,
		Instructions: "Trellis' local tools and operators: exact arithmetic (calculator), the current time, and more."})
	names := make([]string, 0, 8)
	for _, t := range provider.Tools() {
		names = append(names, t.Name)
	}
	log.Info("serving MCP on stdio", slog.String("tools", strings.Join(names, ",")), slog.Int("mcp_servers", len(servers)))
	return mcp.ServeStdio(ctx, srv, sys.in, sys.out)
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
