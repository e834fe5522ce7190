package fuzzroutes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Origin is one real router under origins/<Name>: how to check its
// runtime and how to start it. Each listens on $ORIGIN_ADDR and appends
// one JSON line (Record) to $ORIGIN_LOG per run of a protected handler.
type Origin struct {
	Name string
	// About is the router as the origin runs it.
	About string
	// Root is the spelling of the checkout page its router takes as the
	// route: "/checkout", or Django's "/checkout/" (APPEND_SLASH
	// redirects "/checkout" there).
	Root string
	// check is nil when the runtime and the origin's packages are
	// installed, else an error saying how to install them.
	check func(dir string) error
	// command is the program and its arguments, run from dir (the
	// origin's folder); bin is the built Go origin's path.
	command func(dir, bin, addr string) (string, []string, []string)
}

// systemPython is Debian's Python, where python3-flask and python3-django
// are installed (a python3 earlier on PATH may be another without them).
const systemPython = "/usr/bin/python3"

// Origins are the routers the scenario knows, in report order.
var Origins = []Origin{
	{Name: "express", About: "Express 4 + method-override (npm)", check: npmInstalled("express"),
		command: func(dir, _, _ string) (string, []string, []string) { return "node", []string{"server.js"}, nil }},
	{Name: "fastify", About: "Fastify 4 (npm)", check: npmInstalled("fastify"),
		command: func(dir, _, _ string) (string, []string, []string) { return "node", []string{"server.js"}, nil }},
	{Name: "gomux", About: "Go net/http ServeMux, 1.22 patterns", check: func(string) error { return nil },
		command: func(_, bin, _ string) (string, []string, []string) { return bin, nil, nil }},
	{Name: "flask", About: "Flask/Werkzeug (python3-flask)", check: pythonImports("flask", "python3-flask"),
		command: func(string, string, string) (string, []string, []string) {
			return systemPython, []string{"app.py"}, nil
		}},
	{Name: "django", About: "Django (python3-django)", Root: "/checkout/", check: pythonImports("django", "python3-django"),
		command: func(string, string, string) (string, []string, []string) {
			return systemPython, []string{"app.py"}, nil
		}},
	{Name: "sinatra", About: "Sinatra/Rack on WEBrick, method_override (ruby-sinatra)", check: rubyRequires("sinatra/base", "ruby-sinatra"),
		command: func(string, string, string) (string, []string, []string) { return "ruby", []string{"app.rb"}, nil }},
	{Name: "php", About: "PHP built-in server, front controller (php-cli)", check: onPath("php", "php-cli"),
		command: func(_, _, addr string) (string, []string, []string) {
			return "php", []string{"-S", addr, "router.php"}, []string{"PHP_CLI_SERVER_WORKERS=4"}
		}},
}

// OriginNames are the names of Origins, in order.
func OriginNames() []string {
	var names []string
	for _, o := range Origins {
		names = append(names, o.Name)
	}
	return names
}

func originByName(name string) (Origin, error) {
	for _, o := range Origins {
		if o.Name == name {
			return o, nil
		}
	}
	return Origin{}, fmt.Errorf("fuzzroutes: unknown origin %q (known: %v)", name, OriginNames())
}

func npmInstalled(pkg string) func(dir string) error {
	return func(dir string) error {
		if err := onPath("node", "nodejs npm")(dir); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
			return fmt.Errorf("%s is not installed: run `npm ci --prefix %s` (make test does)", pkg, dir)
		}
		return nil
	}
}

func pythonImports(module, pkg string) func(string) error {
	return func(string) error {
		if out, err := exec.Command(systemPython, "-c", "import "+module).CombinedOutput(); err != nil {
			return fmt.Errorf("%s -c 'import %s': %v %s: apt-get install %s (make test does)", systemPython, module, err, out, pkg)
		}
		return nil
	}
}

func rubyRequires(lib, pkg string) func(string) error {
	return func(dir string) error {
		if err := onPath("ruby", pkg)(dir); err != nil {
			return err
		}
		if out, err := exec.Command("ruby", "-e", "require '"+lib+"'").CombinedOutput(); err != nil {
			return fmt.Errorf("ruby -e \"require '%s'\": %v %s: apt-get install %s (make test does)", lib, err, out, pkg)
		}
		return nil
	}
}

func onPath(bin, pkg string) func(string) error {
	return func(string) error {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%w: apt-get install %s (make test does)", err, pkg)
		}
		return nil
	}
}

// findUp is rel, looked for from the working directory up: the scenario
// runs from anywhere within the repository.
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New(rel + " not found from the working directory up: run from within the repository")
		}
		dir = parent
	}
}
