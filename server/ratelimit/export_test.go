package ratelimit

// SplitBySlot makes l decide checks of different slots as on a Redis
// Cluster (one script per slot, in one round trip), on any Redis.
func SplitBySlot(l *Limiter) { l.cluster = true }
