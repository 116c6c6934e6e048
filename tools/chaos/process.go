package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is one server process of the cluster under test (a name server or a broker): started from a
// binary with fixed arguments, its output appended to a log file, and killed, paused, resumed or restarted
// by the fault schedule. Safe for concurrent use.
type Process struct {
	Name string
	bin  string
	args []string
	env  []string // added to the suite's environment (SetEnv)
	log  string   // output file, appended to across restarts

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{} // closed when the current process has been waited for
		paused bool
	}
}

// NewProcess describes a process; Start runs it.
func NewProcess(name, bin, logFile string, args ...string) *Process {
	return &Process{Name: name, bin: bin, args: args, log: logFile}
}

// SetEnv adds "KEY=value" entries to the environment the process starts with (from its next Start).
func (p *Process) SetEnv(kv ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.env = append(p.env, kv...)
}

// Start runs the process (again, after a kill). The process gets its own process group, so a signal to
// the suite does not reach it and it outlives nothing: Stop, Kill or the suite's Close ends it.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil {
		return fmt.Errorf("chaos: %s is running", p.Name)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("chaos: %s log: %w", p.Name, err)
	}
	fmt.Fprintf(out, "=== chaos: start %s at %s\n", p.Name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("chaos: start %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.mu.cmd, p.mu.exited, p.mu.paused = cmd, exited, false
	go func() { // ends when the process does; Stop, Kill and Close wait for it through exited
		_ = cmd.Wait()
		out.Close()
		p.mu.Lock()
		if p.mu.cmd == cmd {
			p.mu.cmd = nil
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Running reports whether the process is up (paused counts as up).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cmd != nil
}

// Pid is the running process's id, or 0.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd == nil {
		return 0
	}
	return p.mu.cmd.Process.Pid
}

// signal sends sig to the running process and returns the channel closed when it exits.
func (p *Process) signal(sig syscall.Signal) (<-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd == nil {
		return nil, fmt.Errorf("chaos: %s is not running", p.Name)
	}
	if err := p.mu.cmd.Process.Signal(sig); err != nil {
		return nil, fmt.Errorf("chaos: signal %v to %s: %w", sig, p.Name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.mu.paused = true
	case syscall.SIGCONT:
		p.mu.paused = false
	}
	return p.mu.exited, nil
}

// Kill sends SIGKILL and waits until the process is gone.
func (p *Process) Kill() error {
	exited, err := p.signal(syscall.SIGKILL)
	if err != nil {
		return err
	}
	<-exited
	return nil
}

// Stop ends the process in order (SIGCONT if paused, SIGTERM), waiting up to grace before a SIGKILL.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	paused := p.mu.paused
	p.mu.Unlock()
	if paused {
		_, _ = p.signal(syscall.SIGCONT)
	}
	exited, err := p.signal(syscall.SIGTERM)
	if err != nil {
		return nil // not running: nothing to stop
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-t.C:
		return errors.Join(fmt.Errorf("chaos: %s did not stop within %v after SIGTERM", p.Name, grace), p.Kill())
	}
}

// Pause stops the process with SIGSTOP; Resume continues it.
func (p *Process) Pause() error {
	_, err := p.signal(syscall.SIGSTOP)
	return err
}

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() error {
	_, err := p.signal(syscall.SIGCONT)
	return err
}

// logSize is the length of the process's log file now (0 when it cannot be read).
func (p *Process) logSize() int64 {
	st, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logTail is the last n bytes of the process's log file (for an error message).
func (p *Process) logTail(n int64) string {
	f, err := os.Open(p.log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	b := make([]byte, min(n, st.Size()))
	if _, err := f.ReadAt(b, st.Size()-int64(len(b))); err != nil {
		return err.Error()
	}
	return string(b)
}
