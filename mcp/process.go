package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// process is a stdio server's child process. It owns the pipes: stdout is
// read through a [lineChecker] (which notices output that is not
// JSON-RPC), stderr is logged at debug level and its tail kept for error
// messages. The child runs in its own process group so that Close kills
// what it spawned too (npx, shells, docker clients), and on Linux it is
// killed if the service dies without closing it.
type process struct {
	log    *slog.Logger
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *lineChecker
	stderr *tail

	done       chan struct{} // closed when the child has exited
	stderrDone chan struct{} // closed when stderr reached EOF
	exitErr    error         // set before done is closed
	closeOnce  sync.Once
}

// startProcess starts cfg's command. Its stdout is read through limit when
// limit is not nil (see limitReader).
func startProcess(cfg ServerConfig, log *slog.Logger, limit func(io.Reader) io.Reader) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		cmd.Env = append(cmd.Env, k+"="+cfg.Env[k])
	}
	setProcessGroup(cmd)

	// Plain pipes rather than cmd.StdoutPipe: exec's pipes are closed by
	// Wait, which may race with the reader and lose the last response.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: start %s: %w", cfg.Name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("mcp: start %s: %w", cfg.Name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("mcp: start %s: %w", cfg.Name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("mcp: start %s: %w", cfg.Name, err)
	}
	closeAll(inR, outW, errW) // the child has its copies

	p := &process{
		log: log, cmd: cmd, stdin: inW,
		stdout: newLineChecker(outR, limit, log), stderr: &tail{max: 4096},
		done: make(chan struct{}), stderrDone: make(chan struct{}),
	}
	go p.readStderr(errR)
	go func() {
		err := cmd.Wait()
		p.exitErr = err
		killGroup(cmd, false) // whatever the child left behind must not hold the pipes open
		close(p.done)
	}()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// pid is the child's process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) readStderr(r *os.File) {
	defer close(p.stderrDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.stderr.add(line)
		p.log.LogAttrs(context.Background(), slog.LevelDebug, "mcp server stderr", slog.String("line", line))
	}
}

// exited reports whether the child has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.exitErr
	default:
		return false, nil
	}
}

// describe says what became of the process, for error messages: its exit
// status, its last stderr lines, and any output that was not JSON-RPC.
func (p *process) describe() string {
	var parts []string
	if ok, err := p.exited(); ok {
		if err == nil {
			parts = append(parts, "the server exited with status 0")
		} else {
			parts = append(parts, "the server exited: "+err.Error())
		}
	}
	if t := p.stderr.String(); t != "" {
		parts = append(parts, "stderr: "+t)
	}
	if s := p.stdout.describe(); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// close stops the child: stdin is closed (most servers exit on EOF), then
// after grace the group gets SIGTERM, then SIGKILL. It returns when the
// child has exited and its stderr is drained, or after a last bound.
func (p *process) close(grace time.Duration) {
	p.closeOnce.Do(func() {
		_ = p.stdin.Close()
		wait := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-p.done:
				return true
			case <-t.C:
				return false
			}
		}
		if !wait(grace) {
			killGroup(p.cmd, true)
			if !wait(grace) {
				killGroup(p.cmd, false)
				wait(5 * time.Second)
			}
		}
		select {
		case <-p.stderrDone:
		case <-time.After(time.Second):
		}
		_ = p.stdout.r.Close()
	})
}

// tail keeps the last max bytes of a stream's lines.
type tail struct {
	mu    sync.Mutex
	max   int
	lines []string
	size  int
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(line) > t.max {
		line = line[len(line)-t.max:]
	}
	t.lines = append(t.lines, line)
	t.size += len(line)
	for t.size > t.max && len(t.lines) > 1 {
		t.size -= len(t.lines[0])
		t.lines = t.lines[1:]
	}
}

// String is the last lines joined with " | ", at most 512 bytes.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, " | ")
	if len(s) > 512 {
		s = "…" + s[len(s)-512:]
	}
	return s
}

// lineChecker passes a stdio server's stdout through unchanged, line by
// line, and notes every line that is not a JSON-RPC message (mcp-go skips
// them silently, which would leave a request waiting with no explanation).
type lineChecker struct {
	r       *os.File
	br      *bufio.Reader
	pending []byte
	log     *slog.Logger

	mu     sync.Mutex
	bad    int
	sample string // the first bad line: banners and logs on stdout come first
}

func newLineChecker(r *os.File, limit func(io.Reader) io.Reader, log *slog.Logger) *lineChecker {
	var src io.Reader = r
	if limit != nil {
		src = limit(r)
	}
	return &lineChecker{r: r, br: bufio.NewReaderSize(src, 64<<10), log: log}
}

func (c *lineChecker) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		line, err := c.br.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		c.check(line)
		c.pending = line
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *lineChecker) check(line []byte) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return
	}
	var msg struct {
		JSONRPC string `json:"jsonrpc"`
	}
	if json.Unmarshal(t, &msg) == nil && msg.JSONRPC == "2.0" {
		return
	}
	sample := string(t)
	if len(sample) > 120 {
		sample = sample[:120] + "…"
	}
	c.mu.Lock()
	c.bad++
	n := c.bad
	if n == 1 {
		c.sample = sample
	}
	c.mu.Unlock()
	level := slog.LevelWarn
	if n > 3 {
		level = slog.LevelDebug
	}
	c.log.LogAttrs(context.Background(), level, "mcp server wrote a line that is not JSON-RPC; it is ignored",
		slog.String("line", sample), slog.Int("count", n))
}

// describe says how much malformed output there was, or "".
func (c *lineChecker) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bad == 0 {
		return ""
	}
	return fmt.Sprintf("the server wrote %d line(s) on stdout that are not JSON-RPC, the first: %q", c.bad, c.sample)
}

var errProcessExited = errors.New("mcp: server process exited")
