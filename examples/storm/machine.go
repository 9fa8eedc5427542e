package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// machine says what a run was measured on: error counts and latencies follow
// how busy the machine is, so a chart carries it.
type machine struct {
	cpu       string
	cores     int
	loadStart string // load averages over 1, 5 and 15 minutes
	loadEnd   string
	began     time.Time
}

// newMachine describes this machine and its load now.
func newMachine() *machine {
	return &machine{cpu: cpuModel(), cores: runtime.GOMAXPROCS(0), loadStart: loadAverage(), began: time.Now().UTC()}
}

// finish records the load at the end of the run.
func (m *machine) finish() { m.loadEnd = loadAverage() }

func (m *machine) String() string {
	s := fmt.Sprintf("%s, %d cores, %s/%s, %s; load average %s at the start",
		m.cpu, m.cores, runtime.GOOS, runtime.GOARCH, m.began.Format("2006-01-02 15:04 UTC"), m.loadStart)
	if m.loadEnd != "" {
		s += ", " + m.loadEnd + " at the end"
	}
	return s
}

// loadAverage reads the load averages from /proc/loadavg ("unknown" where
// there is none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel reads the CPU's model name from /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "CPU unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "CPU unknown"
}
