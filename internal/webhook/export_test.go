package webhook

// SetPruneBatch sets how many deliveries one transaction of Prune deletes,
// until the returned func puts it back: tests prune over several batches
// without making hundreds of deliveries.
func SetPruneBatch(n int) (restore func()) {
	old := pruneBatch
	pruneBatch = n
	return func() { pruneBatch = old }
}

// PruneBatch is how many deliveries one transaction of Prune deletes.
func PruneBatch() int { return pruneBatch }
