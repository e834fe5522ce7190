// Package crowd is the crowd scenario: a steady crowd of simulated
// shoppers, for a demo or a dashboard to watch rather than a figure to
// measure. --waiting shoppers are kept waiting in the room: the first
// arrive over --ramp, and each one admitted, told gone or giving up is
// replaced by a new arrival after a pause of mean --arrival-gap. Admitted
// shoppers order after a think time (mean --think), so the room's
// throughput is about targetActive ÷ think and a newcomer waits about
// --waiting ÷ throughput. It runs until interrupted (or --duration, or the
// server stops answering for --stop-when-down); then every shopper still
// in the room leaves.
package crowd
