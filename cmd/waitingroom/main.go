package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/server/pgstore"
)

// usage is the command's help, printed by -h, --help and help.
const usage = `Usage:
  waitingroom [serve] [--http ADDR] [--admin ADDR]
        run an instance; configuration comes from the environment
        (WR_*, REDIS_URL, DATABASE_URL: see docs/operations.md, Configuration)
  waitingroom seed [--users N] [--password P] [--products M] [--stock S]
        create demo users user1…userN and products 1…M
  waitingroom COMMAND --help
        the command's flags
`

func main() {
	logCfg, err := compose.LoadLogConfig(os.Getenv)
	log := compose.NewLogger(os.Stderr, logCfg, isTerminal(os.Stderr))
	slog.SetDefault(log)
	if err != nil {
		log.Error("waitingroom: " + err.Error())
		os.Exit(1)
	}
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	} else if len(args) > 0 && isHelp(args[0]) {
		cmd = "help"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "serve":
		err = serve(ctx, log, args)
	case "seed":
		err = seed(ctx, log, args)
	case "help":
		fmt.Fprint(os.Stdout, usage)
	default:
		fmt.Fprint(os.Stderr, usage)
		err = fmt.Errorf("unknown command %q: want serve or seed", cmd)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the flag set printed its usage
	}
	if err != nil {
		log.Error("waitingroom: " + err.Error())
		os.Exit(1)
	}
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// newFlagSet is a flag set for a command whose -h prints to stdout (help
// asked for is output, not an error) and whose bad flags print to stderr.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: waitingroom %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; for -h/--help it prints the usage to stdout and
// returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	return fs.Parse(args)
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func serve(ctx context.Context, log *slog.Logger, args []string) error {
	fs := newFlagSet("serve", "serve [--http ADDR] [--admin ADDR]\n\nRuns an instance; configuration comes from the environment (see docs/operations.md).")
	httpAddr := fs.String("http", "", "public address (overrides WR_HTTP_ADDR)")
	adminAddr := fs.String("admin", "", "management address (overrides WR_ADMIN_ADDR)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := compose.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	if *httpAddr != "" {
		cfg.Server.HTTPAddr = *httpAddr
	}
	if *adminAddr != "" {
		cfg.Server.AdminAddr = *adminAddr
	}
	if cfg.Dev {
		log.Warn("WR_DEV=1: development mode; unless set, the JWT secret is random (tokens die with the process)",
			"adminToken", devAdminToken(cfg))
	}
	if cfg.Server.AdminToken == "" {
		log.Warn("WR_ADMIN_TOKEN is empty: the admin API refuses every request")
	}

	redis.SetLogger(redisLog{log.With("component", "redis")})
	m := &compose.Main{Config: cfg, Log: log}
	if err := m.Open(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	err = m.Run(ctx)
	return errors.Join(err, m.Close())
}

// devAdminToken shows the admin token in development only when it was
// generated (an operator-chosen one is never logged).
func devAdminToken(cfg compose.Config) string {
	if os.Getenv("WR_ADMIN_TOKEN") != "" {
		return "(from WR_ADMIN_TOKEN)"
	}
	return cfg.Server.AdminToken
}

// redisLog sends the Redis client's own messages (one per failed dial, many
// per second during an outage) to the debug level; the outage itself is
// logged once by the admission loop.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.Log(ctx, slog.LevelDebug, fmt.Sprintf(format, v...))
}

func seed(ctx context.Context, log *slog.Logger, args []string) error {
	fs := newFlagSet("seed", "seed [--users N] [--password P] [--products M] [--stock S]\n\nCreates demo users and products in DATABASE_URL.")
	users := fs.Int("users", 10000, "demo users user1…userN")
	password := fs.String("password", "demo-pass", "password of every demo user")
	products := fs.Int("products", 3, "products with ids 1…M (created when missing)")
	stock := fs.Int64("stock", 1000000, "stock of each new product")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *users < 0 || *products < 0 || *stock < 0 || *password == "" {
		return errors.New("seed: --users, --products and --stock must be >= 0 and --password non-empty")
	}
	cfg, err := compose.LoadSeedConfig(os.Getenv)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	store, err := pgstore.Open(octx, cfg.DatabaseURL, pgstore.Options{PoolSize: 4, Logger: log})
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer store.Close()
	// One hash for everyone: 10,000 users seed in well under a second.
	hash, err := bcrypt.GenerateFromPassword([]byte(*password), cfg.BcryptCost)
	if err != nil {
		return fmt.Errorf("seed: hash password: %w", err)
	}
	start := time.Now()
	res, err := store.Seed(octx, pgstore.SeedOptions{Users: *users, PasswordHash: hash, Products: *products, Stock: *stock})
	if err != nil {
		return err
	}
	log.Info("seeded", "users", res.Users, "productsCreated", res.ProductsCreated, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
