package pubsub

import "context"

// Background work that a process runs once per go-redis client, shared by
// every user of the client (caches, locks), lives beside the client's
// pub/sub connections: a Service is made by the Hub's first user that asks
// for it and lives until the Hub's last Release, which stops it (Stop)
// and waits for the goroutines it started with Go.

// Service is shared background work of one client.
type Service interface {
	// Stop is called once, by the Hub's last Release, after the Hub's
	// context is cancelled; the goroutines started with Go are then
	// waited for.
	Stop()
}

// Env is what a Service gets from its Hub.
type Env struct {
	// Done is cancelled by the Hub's last Release.
	Done context.Context
	h    *Hub
}

// Go runs fn on a goroutine that the Hub's last Release waits for; it
// reports false (and runs nothing) once the Hub is closed.
func (e Env) Go(fn func()) bool {
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	if e.h.closed {
		return false
	}
	e.h.goroutines.Go(fn)
	return true
}

// Service returns the Hub's Service of name, made by make on first use
// (make runs under the Hub's lock: it must not call back into the Hub,
// nor Env.Go; the Service starts its goroutines later).
func (h *Hub) Service(name string, make func(Env) Service) Service {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.services[name]; ok {
		return s
	}
	if h.services == nil {
		h.services = map[string]Service{}
	}
	s := make(Env{Done: h.bg, h: h})
	h.services[name] = s
	return s
}

// stopServices stops every Service (the Hub is closed: none is added).
func (h *Hub) stopServices() {
	h.mu.Lock()
	services := h.services
	h.services = nil
	h.mu.Unlock()
	for _, s := range services {
		s.Stop()
	}
}
