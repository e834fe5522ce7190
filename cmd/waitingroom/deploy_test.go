package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"waitingroom/cmd/waitingroom/compose"
	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pass"
)

// The deploy files, checked without a container engine: compose.yaml and
// compose.gateway.yaml read as compose reads them (YAML merge keys, ${VAR}
// interpolation, a later file merged over an earlier one), the layout
// asserted, and every variable they set cross-checked against what the
// server reads. `make image` is run against stand-in engines.

const (
	deployDir   = "../../deploy"
	composeBase = "compose.yaml"
	composeGW   = "compose.gateway.yaml"
)

type composeFile struct {
	Name       string                     `yaml:"name"`
	Services   map[string]*composeService `yaml:"services"`
	Volumes    map[string]any             `yaml:"volumes"`
	Extensions map[string]any             `yaml:",inline"` // x-… blocks only
}

// composeService holds every key the files use; decoding is strict, so a
// misspelt key fails the test as compose would refuse it.
type composeService struct {
	Image       string            `yaml:"image"`
	Build       *composeBuild     `yaml:"build"`
	PullPolicy  string            `yaml:"pull_policy"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Expose      []string          `yaml:"expose"`
	Volumes     []string          `yaml:"volumes"`
	Ulimits     map[string]any    `yaml:"ulimits"`
	Restart     string            `yaml:"restart"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// randomHex is n random bytes in hex, a secret as an operator makes one.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// deployEnv is an operator's environment: real secrets, set by hand.
func deployEnv() map[string]string {
	return map[string]string{
		"WR_JWT_SECRET":  randomHex(32),
		"WR_ADMIN_TOKEN": randomHex(16),
		"SEED_PASSWORD":  "a-demo-password",
		"WR_PASS_KEY":    pass.GenerateKey(),
	}
}

// readCompose reads deploy/<name>, checks its anchors are all used, and
// interpolates it with env; refs collects the variables it names.
func readCompose(t *testing.T, name string, env map[string]string, refs map[string]bool) (*composeFile, error) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	anchors, aliases := map[string]bool{}, map[string]bool{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Anchor != "" {
			anchors[n.Anchor] = true
		}
		if n.Kind == yaml.AliasNode {
			aliases[n.Value] = true
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	for a := range anchors {
		if !aliases[a] {
			t.Errorf("%s: anchor &%s is never used", name, a)
		}
	}

	var f composeFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k := range f.Extensions {
		if !strings.HasPrefix(k, "x-") {
			t.Errorf("%s: unknown top-level key %q", name, k)
		}
	}
	var errs []error
	sub := func(s *string) {
		v, err := interpolate(*s, env, refs)
		errs = append(errs, err)
		*s = v
	}
	for _, s := range f.Services {
		for _, list := range [][]string{s.Command, s.Ports, s.Expose, s.Volumes} {
			for i := range list {
				sub(&list[i])
			}
		}
		for k, v := range s.Environment {
			sub(&v)
			s.Environment[k] = v
		}
		sub(&s.Image)
	}
	return &f, errors.Join(errs...)
}

var (
	bracedVar = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?$`)
	plainVar  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)
)

// interpolate substitutes compose's ${VAR}, ${VAR:-default}, ${VAR-default},
// ${VAR:?error}, ${VAR?error}, ${VAR:+alt}, $VAR and $$, the way compose
// does; any other $ is an error, as compose's "invalid template".
func interpolate(s string, env map[string]string, refs map[string]bool) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+1:]
		switch {
		case strings.HasPrefix(s, "$"):
			b.WriteByte('$')
			s = s[1:]
		case strings.HasPrefix(s, "{"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", fmt.Errorf("invalid template %q: unclosed ${", s)
			}
			expr := s[1:end]
			s = s[end+1:]
			m := bracedVar.FindStringSubmatch(expr)
			if m == nil {
				return "", fmt.Errorf("invalid template ${%s}", expr)
			}
			name, op, arg := m[1], m[2], m[3]
			refs[name] = true
			v, set := env[name]
			empty := !set || (strings.HasPrefix(op, ":") && v == "")
			switch strings.TrimPrefix(op, ":") {
			case "":
				b.WriteString(v)
			case "-":
				if empty {
					v = arg
				}
				b.WriteString(v)
			case "?":
				if empty {
					return "", fmt.Errorf("required variable %s is missing a value: %s", name, arg)
				}
				b.WriteString(v)
			case "+":
				if !empty {
					b.WriteString(arg)
				}
			}
		default:
			m := plainVar.FindString(s)
			if m == "" {
				return "", fmt.Errorf("invalid template: a $ before %q (write $$ for a dollar)", s)
			}
			refs[m] = true
			b.WriteString(env[m])
			s = s[len(m):]
		}
	}
}

// mergeCompose lays over on base as compose merges a later -f file:
// environment and depends_on merged key by key, other keys replaced.
func mergeCompose(base, over *composeFile) {
	for name, o := range over.Services {
		s, ok := base.Services[name]
		if !ok {
			base.Services[name] = o
			continue
		}
		for k, v := range o.Environment {
			if s.Environment == nil {
				s.Environment = map[string]string{}
			}
			s.Environment[k] = v
		}
		for k, v := range o.DependsOn {
			if s.DependsOn == nil {
				s.DependsOn = map[string]struct {
					Condition string `yaml:"condition"`
				}{}
			}
			s.DependsOn[k] = v
		}
		if o.Image != "" {
			s.Image = o.Image
		}
		if o.Command != nil {
			s.Command = o.Command
		}
		if o.Ports != nil {
			s.Ports = o.Ports
		}
	}
}

// serverVariables are the WR_* names the command reads: the string
// literals of its non-test sources and its composition root's (main.go,
// compose/config.go, compose/redis.go…).
func serverVariables(t *testing.T) map[string]bool {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.go", "compose/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	vars := map[string]bool{"REDIS_URL": true, "DATABASE_URL": true}
	re := regexp.MustCompile(`"(WR_[A-Z0-9_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			vars[string(m[1])] = true
		}
	}
	if !vars["WR_JWT_SECRET"] || !vars["WR_LOG_FORMAT"] || len(vars) < 40 {
		t.Fatalf("the server's variables were not found in the sources: %v", vars)
	}
	return vars
}

// appServices are the services that run `serve`, by name.
func appServices(f *composeFile) []string {
	var names []string
	for name, s := range f.Services {
		if len(s.Command) > 0 && s.Command[0] == "serve" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// envGetter reads a service's environment as the server would read it.
func envGetter(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func TestComposeLayout(t *testing.T) {
	f, err := readCompose(t, composeBase, deployEnv(), map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis", "postgres", "seed", "app1", "app2", "lb"} {
		if f.Services[name] == nil {
			t.Fatalf("no service %q", name)
		}
	}
	apps := appServices(f)
	if !slices.Equal(apps, []string{"app1", "app2"}) {
		t.Fatalf("app instances (command serve) = %v, want app1 and app2", apps)
	}

	// One image build, used by both instances and the seed step.
	var builders []string
	for name, s := range f.Services {
		if s.Build != nil {
			builders = append(builders, name)
		}
	}
	if !slices.Equal(builders, []string{"app1"}) {
		t.Fatalf("services with build: %v, want app1 alone (one image build)", builders)
	}
	b, image := f.Services["app1"].Build, f.Services["app1"].Image
	if _, err := os.Stat(filepath.Join(deployDir, b.Context, b.Dockerfile)); err != nil || image == "" {
		t.Errorf("app1 builds %s from %s (context %s): %v", image, b.Dockerfile, b.Context, err)
	}
	for _, name := range []string{"app2", "seed"} {
		if s := f.Services[name]; s.Image != image || s.PullPolicy != "never" {
			t.Errorf("%s: image %q, pull_policy %q; want app1's image %q, never pulled", name, s.Image, s.PullPolicy, image)
		}
	}

	// Start order: every condition is one compose knows, a healthy one
	// has a healthcheck, the apps wait for the data stores and the seed.
	for name, s := range f.Services {
		for dep, d := range s.DependsOn {
			target := f.Services[dep]
			switch {
			case target == nil:
				t.Errorf("%s depends on %s, which is no service", name, dep)
			case d.Condition == "service_healthy" && target.Healthcheck == nil:
				t.Errorf("%s waits for %s to be healthy; it has no healthcheck", name, dep)
			case !slices.Contains([]string{"service_started", "service_healthy", "service_completed_successfully"}, d.Condition):
				t.Errorf("%s depends on %s with condition %q", name, dep, d.Condition)
			}
		}
	}
	for _, app := range apps {
		d := f.Services[app].DependsOn
		if d["redis"].Condition != "service_healthy" || d["postgres"].Condition != "service_healthy" ||
			d["seed"].Condition != "service_completed_successfully" {
			t.Errorf("%s depends_on = %+v; want redis and postgres healthy, seed completed", app, d)
		}
		if f.Services["lb"].DependsOn[app].Condition != "service_started" {
			t.Errorf("lb does not wait for %s", app)
		}
	}

	// The seed step: the command's own flags, the apps' database.
	seed := f.Services["seed"]
	if seed.Command[0] != "seed" || seed.DependsOn["postgres"].Condition != "service_healthy" || seed.Restart != "no" {
		t.Errorf("seed: command %q, depends_on %+v, restart %q", seed.Command, seed.DependsOn, seed.Restart)
	}
	usage := commandOutput(t, "seed --help")
	for _, a := range seed.Command[1:] {
		if strings.HasPrefix(a, "-") && !strings.Contains(usage, "\n  -"+strings.TrimLeft(a, "-")+" ") {
			t.Errorf("seed: flag %s is not one of `waitingroom seed`'s:\n%s", a, usage)
		}
	}
	if _, err := compose.LoadSeedConfig(envGetter(seed.Environment)); err != nil {
		t.Errorf("seed's environment: %v", err)
	}

	// Ports: the public one through nginx only; each management port on
	// this host's loopback, one per instance.
	published := map[string]string{}
	for name, s := range f.Services {
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			container := parts[len(parts)-1]
			switch {
			case name == "lb" && container == "80":
			case slices.Contains(apps, name) && container == "8081" && len(parts) == 3 && parts[0] == "127.0.0.1":
			default:
				t.Errorf("%s publishes %q: only lb's 80, and the apps' 8081 on 127.0.0.1", name, p)
			}
			if other, dup := published[strings.Join(parts[:len(parts)-1], ":")]; dup {
				t.Errorf("%s and %s publish the same host port (%s)", name, other, p)
			}
			published[strings.Join(parts[:len(parts)-1], ":")] = name
		}
	}
	for _, app := range apps {
		if len(f.Services[app].Ports) != 1 {
			t.Errorf("%s: ports %v, want its management port published (the dashboard)", app, f.Services[app].Ports)
		}
	}

	// Each instance's environment is a configuration the server accepts,
	// with its management port listening where the port is published, and
	// pointing at this file's Redis and Postgres.
	pg := f.Services["postgres"].Environment
	for _, name := range append([]string{"seed"}, apps...) {
		u, err := url.Parse(f.Services[name].Environment["DATABASE_URL"])
		if pw, _ := u.User.Password(); err != nil || u.Host != "postgres:5432" || u.User.Username() != pg["POSTGRES_USER"] ||
			pw != pg["POSTGRES_PASSWORD"] || u.Path != "/"+pg["POSTGRES_DB"] {
			t.Errorf("%s: DATABASE_URL %v does not match the postgres service (%v)", name, u, pg)
		}
	}
	for _, app := range apps {
		env := f.Services[app].Environment
		c, err := compose.LoadConfig(envGetter(env))
		if err != nil {
			t.Errorf("%s: the server refuses its environment: %v", app, err)
			continue
		}
		if c.Server.AdminAddr != "0.0.0.0:8081" || c.Server.AdminToken == "" || c.RedisURL != "redis://redis:6379/0" {
			t.Errorf("%s: admin %q (token set: %v), Redis %q", app, c.Server.AdminAddr, c.Server.AdminToken != "", c.RedisURL)
		}
	}

	// nginx balances over exactly the app instances.
	conf, err := os.ReadFile(filepath.Join(deployDir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var upstream []string
	for _, m := range regexp.MustCompile(`(?m)^\s*server\s+([a-z0-9_-]+):8080;`).FindAllSubmatch(conf, -1) {
		upstream = append(upstream, string(m[1]))
	}
	if !slices.Equal(upstream, apps) {
		t.Errorf("nginx.conf's upstream %v, want the app services %v", upstream, apps)
	}
	checkMounts(t, f)
}

// checkMounts: every bind mount's host path exists beside the files.
func checkMounts(t *testing.T, f *composeFile) {
	t.Helper()
	for name, s := range f.Services {
		for _, v := range s.Volumes {
			src := strings.Split(v, ":")[0]
			if !strings.HasPrefix(src, ".") {
				if _, ok := f.Volumes[src]; !ok {
					t.Errorf("%s mounts volume %q, which is not declared", name, src)
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(deployDir, src)); err != nil {
				t.Errorf("%s mounts %s: %v", name, src, err)
			}
		}
	}
}

// TestComposeNeedsRealSecrets: the secrets have no default in the files,
// so compose stops with the variable's name until the operator sets it.
func TestComposeNeedsRealSecrets(t *testing.T) {
	for file, vars := range map[string][]string{
		composeBase: {"WR_JWT_SECRET", "WR_ADMIN_TOKEN", "SEED_PASSWORD"},
		composeGW:   {"WR_PASS_KEY"},
	} {
		for _, v := range vars {
			env := deployEnv()
			delete(env, v)
			if _, err := readCompose(t, file, env, map[string]bool{}); err == nil || !strings.Contains(err.Error(), v) {
				t.Errorf("%s without %s: err = %v, want compose to refuse naming it", file, v, err)
			}
		}
		raw, _ := os.ReadFile(filepath.Join(deployDir, file))
		if strings.Contains(strings.ToLower(string(raw)), "change-me") {
			t.Errorf("%s ships a placeholder secret", file)
		}
	}
}

// TestComposeVariablesAreRead: every WR_* the files set or name is one the
// server reads, so a misspelt variable fails here instead of being
// silently ignored; the apps get no other variables than the two URLs.
func TestComposeVariablesAreRead(t *testing.T) {
	known := serverVariables(t)
	refs := map[string]bool{}
	base, err := readCompose(t, composeBase, deployEnv(), refs)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := readCompose(t, composeGW, deployEnv(), refs)
	if err != nil {
		t.Fatal(err)
	}
	for v := range refs {
		if strings.HasPrefix(v, "WR_") && !known[v] {
			t.Errorf("the compose files name ${%s}, which the server does not read", v)
		}
	}
	for _, f := range []*composeFile{base, gw} {
		for _, app := range []string{"app1", "app2", "seed"} {
			if f.Services[app] == nil {
				continue // the gateway file adds to the apps only
			}
			for k := range f.Services[app].Environment {
				if !known[k] {
					t.Errorf("%s sets %s, which the server does not read", app, k)
				}
			}
		}
	}
	// The Dockerfile's ENV too.
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\b(WR_[A-Z0-9_]+)=`).FindAllSubmatch(df, -1) {
		if !known[string(m[1])] {
			t.Errorf("the Dockerfile sets %s, which the server does not read", m[1])
		}
	}
}

// TestComposeGatewayVariant: compose.gateway.yaml over compose.yaml puts
// both instances in gateway mode in front of the static origin.
func TestComposeGatewayVariant(t *testing.T) {
	env := deployEnv()
	f, err := readCompose(t, composeBase, env, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	over, err := readCompose(t, composeGW, env, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range over.Services {
		if s.Build != nil {
			t.Errorf("%s: the gateway variant builds an image; it must reuse app1's", name)
		}
	}
	mergeCompose(f, over)
	origin := f.Services["origin"]
	if origin == nil || !strings.HasPrefix(origin.Image, "nginx:") || len(origin.Ports) != 0 {
		t.Fatalf("origin = %+v, want an nginx image, no port published", origin)
	}
	for _, page := range []string{"origin/index.html", "origin/checkout/index.html"} {
		if _, err := os.Stat(filepath.Join(deployDir, page)); err != nil {
			t.Error(err)
		}
	}
	checkMounts(t, f)
	for _, app := range appServices(f) {
		s := f.Services[app]
		c, err := compose.LoadConfig(envGetter(s.Environment))
		if err != nil {
			t.Errorf("%s: the server refuses its gateway environment: %v", app, err)
			continue
		}
		g := c.Gateway
		if !g.Enabled() || g.Upstream.URL != "http://origin:80" || len(g.Protect) == 0 || s.DependsOn["origin"].Condition != "service_started" {
			t.Errorf("%s: gateway %+v, depends_on %+v; want the origin service as upstream, protected routes", app, g, s.DependsOn)
		}
	}
}

// TestComposeConfigTool runs compose's own check (`config -q`, no daemon
// needed) when compose v2 is installed: none is on the development
// machines, and the tests above do not need it. (The Python docker-compose
// 1.x does not know the compose specification's newer keys.)
func TestComposeConfigTool(t *testing.T) {
	var tool []string
	for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		out, err := exec.Command(c[0], append(c[1:], "version", "--short")...).Output()
		if err == nil && strings.HasPrefix(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "2") {
			tool = c
			break
		}
	}
	if tool == nil {
		t.Skip("no compose v2 here (docker compose, docker-compose): only TestComposeLayout's parser checked the files")
	}
	for _, files := range [][]string{{composeBase}, {composeBase, composeGW}} {
		args := append([]string{}, tool[1:]...)
		for _, f := range files {
			args = append(args, "-f", filepath.Join(deployDir, f))
		}
		cmd := exec.Command(tool[0], append(args, "config", "-q")...)
		cmd.Env = os.Environ()
		for k, v := range deployEnv() {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", cmd, err, out)
		}
	}
}

// TestPlaceholderSecretsRefused: the example values the repository once
// shipped are refused at start, naming the variable, as is any "change-me"
// value, in development mode too.
func TestPlaceholderSecretsRefused(t *testing.T) {
	cases := []struct{ name, value string }{
		{"WR_JWT_SECRET", "change-me-to-32-or-more-random-bytes!!"},
		{"WR_ADMIN_TOKEN", "change-me-to-16-or-more-random-bytes"},
		{"WR_JWT_SECRET_PREVIOUS", "CHANGE-ME-to-32-or-more-random-bytes!!"},
		{"WR_PASS_KEY", "change-me"},
	}
	for _, tc := range cases {
		for _, dev := range []string{"", "1"} {
			env := map[string]string{"WR_JWT_SECRET": systemtest.TestSecret, "WR_DEV": dev, tc.name: tc.value}
			_, err := compose.LoadConfig(systemtest.EnvOf(env))
			var ce *compose.ConfigError
			if !errors.As(err, &ce) || ce.Var != tc.name || !strings.Contains(err.Error(), tc.name) || strings.Contains(err.Error(), tc.value) {
				t.Errorf("%s=%s (WR_DEV=%q): err = %v, want a ConfigError naming %s without the value", tc.name, tc.value, dev, err, tc.name)
			}
		}
	}
	// The command stops at once with the message (no Redis or Postgres is
	// reached: their URLs point nowhere).
	stderr, code := commandRun(t, map[string]string{
		"WR_JWT_SECRET": "change-me-to-32-or-more-random-bytes!!", "WR_ADMIN_TOKEN": "change-me-to-16-or-more-random-bytes",
		"REDIS_URL": "redis://127.0.0.1:1/0", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
	}, "serve")
	if code != 1 || !strings.Contains(stderr, "WR_JWT_SECRET") || !strings.Contains(stderr, "example value") {
		t.Errorf("serve with the placeholder: exit %d, stderr %q; want 1 and a message naming WR_JWT_SECRET", code, stderr)
	}
}

// commandRun runs the test binary as the command (see TestMain) with
// args and only env and PATH in its environment.
func commandRun(t *testing.T, env map[string]string, args string) (stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"WR_TEST_MAIN=1", "WR_TEST_ARGS=" + args, "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var e bytes.Buffer
	cmd.Stderr = &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return e.String(), 0
}

// commandOutput is the command's stdout for args (its help, say).
func commandOutput(t *testing.T, args string) string {
	t.Helper()
	stdout, _, code := run(t, args)
	if code != 0 {
		t.Fatalf("waitingroom %s: exit %d", args, code)
	}
	return stdout
}

// stubEngine is a stand-in docker or podman: `info` answers when daemon is
// set, `buildx version` when buildx is, `version` prints version; build
// and every call are logged to the file log.
const stubEngine = `#!/bin/bash
echo "${0##*/} $* DOCKER_BUILDKIT=${DOCKER_BUILDKIT:-}" >>"$STUB_LOG"
case "$1" in
info) [[ $STUB_DAEMON == 1 ]] && exit 0
	echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1 ;;
buildx) [[ $STUB_BUILDX == 1 ]] && exit 0
	echo "docker: unknown command: docker buildx" >&2; exit 1 ;;
version) echo "$STUB_VERSION"; exit 1 ;;
build) exit 0 ;;
esac
exit 2
`

// TestMakeImageSaysWhatIsMissing runs `make image` against stand-in
// engines: without a working one it fails with one line saying what is
// missing (not the engine's errors) and builds nothing.
func TestMakeImageSaysWhatIsMissing(t *testing.T) {
	makeTool, err := exec.LookPath("make")
	if err != nil {
		t.Fatal("make is needed:", err)
	}
	timeoutTool, err := exec.LookPath("timeout")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name               string
		engines            []string // stand-ins on PATH
		daemon, buildx     bool
		version            string
		wantErr, wantBuild string // stderr's one line; the logged build call
		wantFail           bool
	}{
		{name: "no engine", wantErr: "make image: neither podman nor docker is installed; podman needs no daemon: apt-get install -y podman", wantFail: true},
		{name: "docker without daemon", engines: []string{"docker"}, version: "28.2.2",
			wantErr: "make image: docker is installed but no daemon answers (docker info fails; start it: systemctl start docker); podman needs no daemon: apt-get install -y podman", wantFail: true},
		{name: "docker 28 without BuildKit", engines: []string{"docker"}, daemon: true, version: "28.2.2",
			wantErr: "make image: docker 28.2.2 has no BuildKit (the buildx plugin, docker-buildx-plugin), which the Dockerfile's RUN --mount needs; install it, or podman", wantFail: true},
		{name: "docker 20 has BuildKit built in", engines: []string{"docker"}, daemon: true, version: "20.10.24+dfsg1",
			wantBuild: "docker build -t waitingroom:latest . DOCKER_BUILDKIT=1"},
		{name: "docker with buildx", engines: []string{"docker"}, daemon: true, buildx: true, version: "28.2.2",
			wantBuild: "docker build -t waitingroom:latest . DOCKER_BUILDKIT=1"},
		{name: "podman first", engines: []string{"podman", "docker"}, daemon: true,
			wantBuild: "podman build -t waitingroom:latest . DOCKER_BUILDKIT=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			if err := os.Symlink(timeoutTool, filepath.Join(bin, "timeout")); err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.engines {
				if err := os.WriteFile(filepath.Join(bin, e), []byte(stubEngine), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			logFile := filepath.Join(t.TempDir(), "calls")
			flag := func(b bool) string { return map[bool]string{true: "1", false: "0"}[b] }
			stderr, calls, failed := runMakeImage(t, makeTool, []string{"PATH=" + bin, "STUB_LOG=" + logFile,
				"STUB_DAEMON=" + flag(tc.daemon), "STUB_BUILDX=" + flag(tc.buildx), "STUB_VERSION=" + tc.version}, logFile)
			if failed != tc.wantFail {
				t.Errorf("failed = %v, want %v; stderr:\n%s", failed, tc.wantFail, stderr)
			}
			if tc.wantErr != "" && !slices.Equal(recipeLines(stderr), []string{tc.wantErr}) {
				t.Errorf("stderr:\n%s\nwant the one line:\n%s", stderr, tc.wantErr)
			}
			built := slices.ContainsFunc(calls, func(c string) bool { return strings.Contains(c, " build ") })
			if tc.wantBuild == "" && built || tc.wantBuild != "" && !slices.Contains(calls, tc.wantBuild) {
				t.Errorf("engine calls %q, want build %q", calls, tc.wantBuild)
			}
		})
	}

	// This machine's own engine, when it is a docker CLI without a daemon
	// (as on the development machines).
	t.Run("this machine", func(t *testing.T) {
		if _, err := exec.LookPath("docker"); err != nil || exec.Command("docker", "info").Run() == nil {
			t.Log("no daemonless docker CLI here")
			return
		}
		if _, err := exec.LookPath("podman"); err == nil {
			t.Log("podman is installed: make image may build")
			return
		}
		stderr, _, failed := runMakeImage(t, makeTool, []string{"PATH=" + os.Getenv("PATH")}, "")
		if !failed || !slices.Equal(recipeLines(stderr), []string{cases[1].wantErr}) || strings.Contains(stderr, "Cannot connect") {
			t.Errorf("make image: failed %v, stderr:\n%s", failed, stderr)
		}
	})
}

// runMakeImage runs `make -s image` at the repository's root with env
// (and HOME), and returns its stderr, the logged engine calls, and
// whether it failed.
func runMakeImage(t *testing.T, makeTool string, env []string, logFile string) (stderr string, calls []string, failed bool) {
	t.Helper()
	cmd := exec.Command(makeTool, "-s", "-C", "../..", "image")
	cmd.Env = append(env, "HOME="+t.TempDir())
	var e bytes.Buffer
	cmd.Stderr = &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if logFile != "" {
		if b, err := os.ReadFile(logFile); err == nil {
			calls = strings.Split(strings.TrimSpace(string(b)), "\n")
		}
	}
	return e.String(), calls, err != nil
}

// recipeLines are stderr's lines less make's own "make: ***" ones.
func recipeLines(stderr string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "make: ***") && !strings.HasPrefix(l, "make[") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestDockerfileCopiesWhatTheCommandImports: the image's build stage
// copies each top-level package the command imports, and .dockerignore
// keeps none of them out: no engine builds the image here, so a new
// package would otherwise break the image unseen.
func TestDockerfileCopiesWhatTheCommandImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	need := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		if dir, ok := strings.CutPrefix(p, "waitingroom/"); ok {
			need[strings.Split(dir, "/")[0]] = true
		}
	}
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	copied := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^COPY ([a-z0-9_-]+) \./([a-z0-9_-]+)$`).FindAllSubmatch(df, -1) {
		copied[string(m[1])] = true
	}
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := strings.Fields(string(regexp.MustCompile(`(?m)^#.*$`).ReplaceAll(ignore, nil)))
	if len(need) < 4 {
		t.Fatalf("go list found %v", need)
	}
	for dir := range need {
		if !copied[dir] {
			t.Errorf("the command imports waitingroom/%s/…, which the Dockerfile does not copy", dir)
		}
		if slices.Contains(ignored, dir) {
			t.Errorf(".dockerignore keeps %s out of the build context", dir)
		}
	}
}
