//go:build unix

package servebench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"
)

// Time limits of a server's life.
const (
	// StartTimeout bounds a server's start: listening, and (structgen)
	// the model loaded. The bench's models load in well under a second;
	// the bound is for a loaded machine.
	StartTimeout = 3 * time.Minute
	// StopTimeout is how long Stop waits after SIGTERM before it kills
	// the server's process group.
	StopTimeout = 20 * time.Second
)

// Proc is a server process the bench started, in its own process group
// (Ollama starts a runner process per model).
type Proc struct {
	Name   string // for tables, e.g. "ollama v0.24.0"
	URL    *url.URL
	Client *api.Client
	Dir    string // scratch folder (logs; Ollama's HOME and models), removed by Stop

	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// OllamaOptions configure ollama serve.
type OllamaOptions struct {
	Binary   string // the ollama executable
	GGUF     string // imported with a Modelfile (FROM the file)
	Model    string // the name it is imported under
	Parallel int    // OLLAMA_NUM_PARALLEL
	NumCtx   int    // PARAMETER num_ctx: context per sequence (Ollama allocates NumCtx × Parallel)
	Threads  int    // PARAMETER num_thread; 0: Ollama's default
	// NewEngine selects Ollama's Go engine (OLLAMA_NEW_ENGINE=1) instead
	// of the llama.cpp runner it uses for llama-architecture GGUFs.
	NewEngine bool
}

// StartOllama starts ollama serve on a free loopback port with its state
// in a scratch folder, and imports the GGUF (ollama create -f Modelfile).
func StartOllama(ctx context.Context, o OllamaOptions) (*Proc, error) {
	dir, addr, err := scratch("ollama")
	if err != nil {
		return nil, err
	}
	env := append(environ("OLLAMA_"),
		"HOME="+dir, // ollama writes its keys under ~/.ollama
		"OLLAMA_HOST="+addr,
		"OLLAMA_MODELS="+filepath.Join(dir, "models"),
		"OLLAMA_NUM_PARALLEL="+strconv.Itoa(o.Parallel),
		"OLLAMA_MAX_LOADED_MODELS=1",
		"OLLAMA_KEEP_ALIVE=-1", // never unload between runs
		"OLLAMA_NEW_ENGINE="+strconv.FormatBool(o.NewEngine),
	)
	p, err := start(ctx, "ollama", dir, env, addr, o.Binary, "serve")
	if err != nil {
		return nil, err
	}
	ready := func(ctx context.Context) error { return p.Client.Heartbeat(ctx) }
	if err := p.wait(ctx, ready); err != nil {
		return nil, p.fail(err)
	}
	modelfile := fmt.Sprintf("FROM %s\n", o.GGUF)
	if o.NumCtx > 0 {
		modelfile += fmt.Sprintf("PARAMETER num_ctx %d\n", o.NumCtx)
	}
	if o.Threads > 0 {
		modelfile += fmt.Sprintf("PARAMETER num_thread %d\n", o.Threads)
	}
	mf := filepath.Join(dir, "Modelfile")
	if err := os.WriteFile(mf, []byte(modelfile), 0o644); err != nil {
		return nil, p.fail(err)
	}
	create := exec.CommandContext(ctx, p.cmd.Path, "create", o.Model, "-f", mf)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		return nil, p.fail(fmt.Errorf("ollama create %s: %w: %s", o.Model, err, lastLine(string(out))))
	}
	return p, nil
}

// StructgenOptions configure structgen serve.
type StructgenOptions struct {
	Binary   string // the structgen executable (built with -tags llamacpp)
	GGUF     string
	Parallel int // --parallel
	Ctx      int // --ctx: context shared by the sequences
	MaxQueue int // --max-queue
	Args     []string
}

// StartStructgen starts structgen serve on a free loopback port and waits
// until GET /health answers 200 (the model is loaded and the heap touched).
func StartStructgen(ctx context.Context, o StructgenOptions) (*Proc, error) {
	dir, addr, err := scratch("structgen")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--addr", addr, "--model", o.GGUF,
		"--parallel", strconv.Itoa(o.Parallel), "--ctx", strconv.Itoa(o.Ctx), "--max-queue", strconv.Itoa(o.MaxQueue)}
	p, err := start(ctx, "structgen", dir, os.Environ(), addr, o.Binary, append(args, o.Args...)...)
	if err != nil {
		return nil, err
	}
	health := p.URL.JoinPath("/health").String()
	ready := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, "GET", health, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /health: %s", resp.Status)
		}
		return nil
	}
	if err := p.wait(ctx, ready); err != nil {
		return nil, p.fail(err)
	}
	return p, nil
}

func start(ctx context.Context, name, dir string, env []string, addr, bin string, args ...string) (*Proc, error) {
	// The server runs in its scratch folder: a relative path would be
	// looked up there.
	bin, err := absBinary(bin)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	u := &url.URL{Scheme: "http", Host: addr}
	p := &Proc{Name: name, URL: u, Client: api.NewClient(u, http.DefaultClient), Dir: dir, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// wait polls ready until it succeeds, the process exits or StartTimeout
// passes.
func (p *Proc) wait(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		last = ready(rctx)
		rcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting (%v)", p.Name, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %v", p.Name, StartTimeout, last)
		case <-tick.C:
		}
	}
}

// fail stops a server that did not start and returns err with the end of
// its log.
func (p *Proc) fail(err error) error {
	tail := p.LogTail(8)
	p.Stop()
	return fmt.Errorf("%w\n%s log:\n%s", err, p.Name, tail)
}

// Stop sends SIGTERM to the server's process group, kills it after
// StopTimeout, and removes the scratch folder.
func (p *Proc) Stop() error {
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	var err error
	select {
	case <-p.exited:
	case <-time.After(StopTimeout):
		err = fmt.Errorf("%s did not stop within %v of SIGTERM: killed", p.Name, StopTimeout)
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	// Runners of the group that outlive the server.
	syscall.Kill(-pgid, syscall.SIGKILL)
	return errors.Join(err, os.RemoveAll(p.Dir))
}

// CPUTime is the CPU time (user and system) the server's process group
// has used so far: the server and its runners, and their children that
// ended. Under a shared machine's load it measures the work a run cost
// where wall time measures the machine.
func (p *Proc) CPUTime() (time.Duration, error) {
	return groupCPU(p.cmd.Process.Pid)
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// groupCPU sums the CPU times of the processes in process group pgid.
func groupCPU(pgid int) (time.Duration, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	found := false
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		g, cpu, err := parseStat(string(b))
		if err != nil {
			return 0, err
		}
		if g == pgid {
			total += cpu
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("no process in group %d", pgid)
	}
	return total, nil
}

// parseStat reads the process group and the CPU time (utime + stime +
// cutime + cstime) from a /proc/PID/stat line.
func parseStat(line string) (pgrp int, cpu time.Duration, err error) {
	i := strings.LastIndexByte(line, ')') // the command name may hold spaces and parentheses
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): pgrp is field 5, utime..cstime 14..17.
	if i < 0 || len(f) < 15 {
		return 0, 0, fmt.Errorf("/proc stat line %q: too short", line)
	}
	if pgrp, err = strconv.Atoi(f[2]); err != nil {
		return 0, 0, fmt.Errorf("/proc stat line: pgrp: %w", err)
	}
	var ticks int64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc stat line: times: %w", err)
		}
		ticks += n
	}
	return pgrp, time.Duration(ticks) * clockTick, nil
}

// LogTail returns the last n lines of the server's output.
func (p *Proc) LogTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// absBinary resolves an executable as exec.Command would, to an absolute
// path.
func absBinary(bin string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// scratch makes a server's scratch folder and picks a loopback address
// whose port was free a moment ago.
func scratch(name string) (dir, addr string, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	addr = l.Addr().String()
	l.Close()
	dir, err = os.MkdirTemp("", "servebench-"+name)
	return dir, addr, err
}

// environ is the environment without the variables that start with
// prefix (a user's OLLAMA_HOST must not point the bench elsewhere).
func environ(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}
