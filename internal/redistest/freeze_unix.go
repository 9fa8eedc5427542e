//go:build unix

package redistest

import "syscall"

// Freeze stops the server's process with SIGSTOP, as a stalled host would:
// connections stay open and nothing answers. Thaw resumes it.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server with SIGCONT.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatalf("redistest: signal %v: no process (miniredis or stopped)", sig)
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}
