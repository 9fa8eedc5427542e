package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Config says which server to tail and how to present itself to it.
type Config struct {
	Addr     string // host:port
	User     string // needs REPLICATION SLAVE and REPLICATION CLIENT
	Password string
	// Flavor is "mysql" (the default) or "mariadb".
	Flavor string
	// ServerID identifies this reader among the server's replicas; it must
	// be unique among them and non-zero. The instances of one fleet
	// (RedisPositions on one key) share one: only the elected tailer
	// connects. Another connection under it (a second fleet, a replica)
	// takes the stream over; the Source reports it and reconnects.
	ServerID uint32
}

// ErrInvalidOption is wrapped by New's error for an option that makes no
// sense.
var ErrInvalidOption = kind.InvalidOption("binlog")

// ErrInvalidArgument is wrapped by New's error for a configuration or a rule
// that makes no sense.
var ErrInvalidArgument = kind.InvalidArgument("binlog")

// ErrRedis is wrapped by the error of a RedisPositions call that failed
// (the end of the caller's own context comes back as it is).
var ErrRedis = kind.Redis("binlog")

// Option configures a Source. New rejects values that make no sense with an
// error wrapping ErrInvalidOption. A nil Option is ignored.
type Option func(*options)

type options struct {
	logger      *slog.Logger
	onError     func(error)
	onCommit    func(Position, []string)
	minBackoff  time.Duration
	maxBackoff  time.Duration
	flushKeys   int
	saveEvery   int
	saveLag     time.Duration
	skipUnnamed bool
	lease       time.Duration
	syncerCfg   func(*replication.BinlogSyncerConfig)
	errs        option.Errors // the first invalid option
}

func defaultOptions() options {
	return options{logger: slog.Default(), minBackoff: 100 * time.Millisecond, maxBackoff: 5 * time.Second,
		flushKeys: 1000, saveEvery: 1000, saveLag: time.Second, lease: 5 * time.Second, errs: option.For(ErrInvalidOption)}
}

// WithLogger sets where errors that Run does not return are logged (failed
// deletes being retried, skipped events). The default, and what a nil
// logger stands for, is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = option.Logger(l) } }

// WithErrorHandler registers fn to be called, besides the logger, with every
// error Run does not return; nil means no handler.
func WithErrorHandler(fn func(error)) Option { return func(o *options) { o.onError = fn } }

// WithOnCommit registers fn to be called each time the keys of the changes
// up to pos were invalidated and pos was saved (for metrics: lag, rates).
// keys are the keys invalidated since the previous call. fn runs on the
// tailing goroutine and must be fast.
func WithOnCommit(fn func(pos Position, keys []string)) Option {
	return func(o *options) { o.onCommit = fn }
}

// WithBackoff sets the pause between tries of a failed delete (default
// 100 ms doubling to 5 s, each pause jittered down by up to half). While a
// delete fails, tailing stops: the position does not move past a change
// whose keys were not invalidated.
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) {
		o.errs.Backoff(min, max)
		o.minBackoff, o.maxBackoff = min, max
	}
}

// WithFlushKeys sets how many keys may pile up before they are invalidated
// (default 1000), even in the middle of a transaction.
func WithFlushKeys(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.errs.Invalid("flush keys %d must be at least 1", n)
		}
		o.flushKeys = n
	}
}

// WithSaveEvery bounds how far the saved position may trail the changes
// already invalidated: it is saved once the binlog has no event waiting,
// and otherwise at least every n transactions and every lag (defaults 1000
// and 1 s). Keys of the transactions in between are invalidated together,
// in one round trip per target, which is what makes catching up on a
// backlog fast. A crash replays at most that many transactions: their keys
// are invalidated twice, never skipped.
func WithSaveEvery(n int, lag time.Duration) Option {
	return func(o *options) {
		if n < 1 || lag <= 0 {
			o.errs.Invalid("save every %d transactions / %v: want n >= 1 and a positive lag", n, lag)
		}
		o.saveEvery, o.saveLag = n, lag
	}
}

// WithSkipUnnamedRows makes rows of watched tables whose events carry no
// column names (written before binlog_row_metadata=FULL was set) logged,
// counted (Stats.UnnamedRows) and skipped instead of stopping Run with
// ErrNoColumnNames. Their keys are not invalidated: only for operators who
// know those rows are cached no more.
func WithSkipUnnamedRows() Option { return func(o *options) { o.skipUnnamed = true } }

// WithLease sets the tailer's lease (default 5 s): with RedisPositions,
// the tailer renews it every third of it, and another instance takes over
// once it has run out, so a tailer that stops, crashes or freezes is
// replaced within the lease plus a reconnection. The stream's heartbeat is
// a fifth of it (at least 100 ms): a stream that brings nothing for three
// heartbeats is taken for lost, reported and reconnected.
func WithLease(d time.Duration) Option {
	return func(o *options) {
		if d < 500*time.Millisecond {
			o.errs.Invalid("lease %v: want at least 500ms", d)
		}
		o.lease = d
	}
}

// WithSyncerConfig lets fn adjust the replication client's configuration
// (TLS, timeouts, heartbeat, charset) after the Source has filled it in.
func WithSyncerConfig(fn func(*replication.BinlogSyncerConfig)) Option {
	return func(o *options) { o.syncerCfg = fn }
}

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
	stats     counters

	runMu sync.Mutex // one Run at a time
}

// New checks the configuration and returns a Source; it does not connect
// (Run does).
func New(cfg Config, positions PositionStore, rules []Rule, opts ...Option) (*Source, error) {
	switch {
	case cfg.Addr == "":
		return nil, fmt.Errorf("%w: empty address", ErrInvalidArgument)
	case cfg.ServerID == 0:
		return nil, fmt.Errorf("%w: server id must be non-zero", ErrInvalidArgument)
	case positions == nil:
		return nil, fmt.Errorf("%w: nil position store", ErrInvalidArgument)
	case len(rules) == 0:
		return nil, fmt.Errorf("%w: no rules", ErrInvalidArgument)
	}
	if cfg.Flavor == "" {
		cfg.Flavor = mysql.MySQLFlavor
	}
	if cfg.Flavor != mysql.MySQLFlavor && cfg.Flavor != mysql.MariaDBFlavor {
		return nil, fmt.Errorf("%w: flavor %q", ErrInvalidArgument, cfg.Flavor)
	}
	if _, _, err := splitAddr(cfg.Addr); err != nil {
		return nil, fmt.Errorf("%w: address %q: %v", ErrInvalidArgument, cfg.Addr, err)
	}
	s := &Source{cfg: cfg, positions: positions, rules: make(map[string]Rule), opt: defaultOptions()}
	for _, r := range rules {
		if r.Schema == "" || r.Table == "" || r.Target == nil || r.Keys == nil || r.SecondDelete < 0 {
			return nil, fmt.Errorf("%w: rule for %s.%s incomplete", ErrInvalidArgument, r.Schema, r.Table)
		}
		name := r.Schema + "." + r.Table
		if _, dup := s.rules[name]; dup {
			return nil, fmt.Errorf("%w: two rules for %s", ErrInvalidArgument, name)
		}
		s.rules[name] = r
	}
	option.Apply(&s.opt, opts)
	if err := s.opt.errs.Err(); err != nil {
		return nil, err
	}
	s.log = s.opt.logger
	return s, nil
}

func splitAddr(addr string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, err
	}
	return host, uint16(p), nil
}

// Stats returns the Source's counters since New.
func (s *Source) Stats() Stats { return s.stats.snapshot() }

// Run checks the server's settings (see ErrServerSetting), then tails the
// binlog from the stored position (from the server's current position when
// none is stored) until ctx is done. It returns nil when ctx ends it; no
// goroutine it started is left running.
//
// With RedisPositions, the Sources that share the position key elect one
// tailer among them (fleet.go): Run stands by while another instance
// tails, takes over within the lease (WithLease) when it stops, and
// reports every failure of its stream (an error, a server-id conflict, a
// stream silent for longer than the heartbeat allows) and tries again; it
// returns an error only for what retrying cannot mend (ErrServerSetting,
// ErrNoColumnNames, a corrupt position). With another PositionStore, Run
// tails alone and returns the first error that ends tailing.
func (s *Source) Run(ctx context.Context) error {
	if !s.runMu.TryLock() {
		return errors.New("cacheguard: binlog: Run is already running")
	}
	defer s.runMu.Unlock()
	defer s.stats.setRole(RoleStopped)
	if el, ok := s.positions.(elector); ok {
		return s.runFleet(ctx, el)
	}
	s.stats.setRole(RoleTailing)
	return s.tail(ctx, s.positions.Save)
}

// tail tails the binlog once, from the stored position, saving with save,
// until ctx ends (nil) or tailing fails.
func (s *Source) tail(ctx context.Context, save func(context.Context, Position) error) error {
	start, ok, err := s.positions.Load(ctx)
	if err != nil {
		return err
	}
	current, err := s.checkServer(ctx)
	if err != nil {
		return err
	}
	if !ok {
		start = current
		s.log.Info("cacheguard: binlog: no stored position, starting at the server's current one", "pos", start)
	}
	host, port, _ := splitAddr(s.cfg.Addr)
	// The stream's failures come back to Run (DisableRetrySync) instead of
	// being retried inside the client, where a stream taken over by
	// another connection under the same server id stalled with no error;
	// a stream silent for three heartbeats fails its read.
	heartbeat := max(s.opt.lease/5, 100*time.Millisecond)
	sc := replication.BinlogSyncerConfig{ServerID: s.cfg.ServerID, Flavor: s.cfg.Flavor,
		Host: host, Port: port, User: s.cfg.User, Password: s.cfg.Password, Logger: s.log,
		HeartbeatPeriod: heartbeat, ReadTimeout: 3 * heartbeat, DisableRetrySync: true}
	if s.opt.syncerCfg != nil {
		s.opt.syncerCfg(&sc)
	}
	syncer := replication.NewBinlogSyncer(sc)
	defer syncer.Close()
	streamer, err := syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Offset})
	if err != nil {
		return kind.Errorf("cacheguard: binlog: start replication at %v: %w", start, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan eventOrErr, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(events)
		for {
			ev, err := streamer.GetEvent(rctx)
			if err == nil {
				s.stats.lastEvent.Store(time.Now().UnixNano())
			}
			select {
			case events <- eventOrErr{ev, err}:
			case <-rctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	t := newTailer(ctx, s, start, save)
	err = t.run(events)
	cancel()
	syncer.Close()
	wg.Wait()
	if ctx.Err() != nil {
		t.saveOnStop()
		return nil
	}
	return err
}

type eventOrErr struct {
	ev  *replication.BinlogEvent
	err error
}
