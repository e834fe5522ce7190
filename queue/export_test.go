package queue

// BatchWaiting is how many callers wait for a round trip of q's batcher
// (tests only).
func BatchWaiting(q *Queue) int {
	q.batch.mu.Lock()
	defer q.batch.mu.Unlock()
	return len(q.batch.next)
}
