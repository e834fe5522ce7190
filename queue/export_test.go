package queue

// BatchWaiting is how many callers wait for a round trip of q's enter and
// status scripts (tests only).
func BatchWaiting(q *Queue) int { return q.batch.Waiting() }
