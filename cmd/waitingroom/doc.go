// Command waitingroom runs the virtual waiting room.
//
//	waitingroom [serve]                         run an instance (config from the environment)
//	waitingroom seed --users N --password P --products M --stock S
//	                                            create demo users and products
//
// The command parses its flags and hands the configuration to the
// composition root, package compose, which builds and runs the instance.
//
// The package's tests are the command's own (its help, the deploy files
// checked against the variables it reads) and the module's import rules;
// some start the test binary as the command itself (TestMain). The system
// scenarios are the tests of systemtest's packages.
package main
