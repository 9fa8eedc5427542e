package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/go-mysql-org/go-mysql/canal"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// Config says which server to tail and how to present itself to it.
type Config struct {
	Addr     string // host:port
	User     string // needs REPLICATION SLAVE, REPLICATION CLIENT and SELECT on the watched tables
	Password string
	// Flavor is "mysql" (the default) or "mariadb".
	Flavor string
	// ServerID identifies this reader among the server's replicas; it must
	// be unique among them and non-zero.
	ServerID uint32
}

// Option configures a Source.
type Option func(*options)

type options struct {
	logger     *slog.Logger
	onError    func(error)
	onCommit   func(Position, []string)
	minBackoff time.Duration
	maxBackoff time.Duration
	flushKeys  int
	canalCfg   func(*canal.Config)
}

// WithLogger sets where errors that Run does not return are logged (failed
// deletes being retried). The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithErrorHandler registers fn to be called, besides the logger, with every
// error Run does not return.
func WithErrorHandler(fn func(error)) Option { return func(o *options) { o.onError = fn } }

// WithOnCommit registers fn to be called each time the keys of the changes
// up to pos were invalidated and pos was saved (for metrics: lag, rates).
// keys are the keys invalidated since the previous call. fn runs on the
// tailing goroutine and must be fast.
func WithOnCommit(fn func(pos Position, keys []string)) Option {
	return func(o *options) { o.onCommit = fn }
}

// WithRetryBackoff sets the pause between tries of a failed delete (default
// 100 ms doubling to 5 s). While a delete fails, tailing stops: the position
// does not move past a change whose keys were not invalidated.
func WithRetryBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}

// WithFlushKeys sets how many keys a transaction may pile up before they are
// invalidated ahead of its commit event (default 1000); the position is
// saved only at commit events either way.
func WithFlushKeys(n int) Option { return func(o *options) { o.flushKeys = n } }

// WithCanalConfig lets fn adjust the canal configuration (TLS, timeouts,
// heartbeat, charset) after the Source has filled it in.
func WithCanalConfig(fn func(*canal.Config)) Option { return func(o *options) { o.canalCfg = fn } }

// Source tails a MySQL or MariaDB binlog (ROW format) and invalidates the
// cache keys of every changed row of the watched tables through their
// consistency.Target: at once, with a retry recorded in the queue when the
// delete fails. It saves its binlog position only after the keys of every
// change before it were invalidated, so a restart resumes where it stopped
// and no change is skipped; a change may be invalidated twice.
type Source struct {
	cfg       Config
	positions PositionStore
	rules     map[string]Rule // "schema.table"
	opt       options
	log       *slog.Logger
}

// New checks the configuration and returns a Source; it does not connect
// (Run does).
func New(cfg Config, positions PositionStore, rules []Rule, opts ...Option) (*Source, error) {
	switch {
	case cfg.Addr == "":
		return nil, fmt.Errorf("%w: binlog: empty address", cache.ErrInvalidOption)
	case cfg.ServerID == 0:
		return nil, fmt.Errorf("%w: binlog: server id must be non-zero", cache.ErrInvalidOption)
	case positions == nil:
		return nil, fmt.Errorf("%w: binlog: nil position store", cache.ErrInvalidOption)
	case len(rules) == 0:
		return nil, fmt.Errorf("%w: binlog: no rules", cache.ErrInvalidOption)
	}
	if cfg.Flavor == "" {
		cfg.Flavor = mysql.MySQLFlavor
	}
	if cfg.Flavor != mysql.MySQLFlavor && cfg.Flavor != mysql.MariaDBFlavor {
		return nil, fmt.Errorf("%w: binlog: flavor %q", cache.ErrInvalidOption, cfg.Flavor)
	}
	s := &Source{cfg: cfg, positions: positions, rules: make(map[string]Rule),
		opt: options{minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second, flushKeys: 1000}}
	for _, r := range rules {
		if r.Schema == "" || r.Table == "" || r.Target == nil || r.Keys == nil {
			return nil, fmt.Errorf("%w: binlog: rule for %s.%s incomplete", cache.ErrInvalidOption, r.Schema, r.Table)
		}
		name := r.Schema + "." + r.Table
		if _, dup := s.rules[name]; dup {
			return nil, fmt.Errorf("%w: binlog: two rules for %s", cache.ErrInvalidOption, name)
		}
		s.rules[name] = r
	}
	for _, o := range opts {
		if o != nil {
			o(&s.opt)
		}
	}
	if s.opt.minBackoff <= 0 || s.opt.maxBackoff < s.opt.minBackoff || s.opt.flushKeys < 1 {
		return nil, fmt.Errorf("%w: binlog: backoff %v..%v, flush keys %d", cache.ErrInvalidOption,
			s.opt.minBackoff, s.opt.maxBackoff, s.opt.flushKeys)
	}
	s.log = s.opt.logger
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// Run tails the binlog from the stored position (from the server's current
// position when none is stored) until ctx is done or tailing fails. It
// returns nil when ctx ends it; no goroutine it started is left running.
func (s *Source) Run(ctx context.Context) error {
	start, ok, err := s.positions.Load(ctx)
	if err != nil {
		return err
	}
	cc := canal.NewDefaultConfig()
	cc.Addr, cc.User, cc.Password = s.cfg.Addr, s.cfg.User, s.cfg.Password
	cc.Flavor, cc.ServerID = s.cfg.Flavor, s.cfg.ServerID
	cc.Dump.ExecutionPath = "" // no initial dump: the cache only needs changes
	cc.Logger = s.log
	cc.IncludeTableRegex = nil
	for name := range s.rules {
		cc.IncludeTableRegex = append(cc.IncludeTableRegex, "^"+regexp.QuoteMeta(name)+"$")
	}
	if s.opt.canalCfg != nil {
		s.opt.canalCfg(cc)
	}
	c, err := canal.NewCanal(cc)
	if err != nil {
		return fmt.Errorf("cacheguard binlog: connect: %w", err)
	}
	if !ok {
		mp, err := c.GetMasterPos()
		if err != nil {
			c.Close()
			return fmt.Errorf("cacheguard binlog: current position: %w", err)
		}
		start = Position{File: mp.Name, Offset: mp.Pos}
		s.log.Info("cacheguard binlog: no stored position, starting at the server's current one", "pos", start)
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := newHandler(hctx, s)
	c.SetEventHandler(h)
	done := make(chan error, 1)
	go func() { done <- c.RunFrom(mysql.Position{Name: start.File, Pos: start.Offset}) }()
	select {
	case <-ctx.Done():
		cancel() // stops a retry loop in the handler
		c.Close()
		<-done
		return nil
	case err := <-done:
		cancel()
		c.Close()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = errors.New("canal stopped")
		}
		return fmt.Errorf("cacheguard binlog: %w", err)
	}
}
