package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dpstream/dpstream/internal/kafkaio"
)

// The bench's baselines read the same topic as the pipeline, with no
// decoding, so that they measure Kafka I/O alone: what a consumer of that
// client costs at best. Each reads every partition to the end offsets
// given, concurrently, and returns how long that took.

// benchReaderBaseline reads with a kafka-go Reader, one record at a time,
// made as the stages make theirs (kafkaio's partition reader).
func benchReaderBaseline(ctx context.Context, conn *kafkaio.Connection, topic string, ends map[int]int64) (time.Duration, error) {
	return benchPartitions(ends, func(p int, end int64) (int64, error) {
		r, err := conn.NewPartitionReader(topic, p, kafka.FirstOffset)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		var got int64
		for got < end {
			if _, err := r.ReadMessage(ctx); err != nil {
				return got, err
			}
			got++
		}
		return got, nil
	})
}

// benchBatchBaseline reads with kafka-go's fastest API: a connection to
// the partition's leader and Conn.ReadBatch, a fetch at a time.
func benchBatchBaseline(ctx context.Context, addr, topic string, ends map[int]int64) (time.Duration, error) {
	return benchPartitions(ends, func(p int, end int64) (int64, error) {
		c, err := kafka.DialLeader(ctx, "tcp", addr, topic, p)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		var got, off int64
		for off < end {
			if _, err := c.Seek(off, kafka.SeekAbsolute); err != nil {
				return got, err
			}
			if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
				return got, err
			}
			b := c.ReadBatch(1, 16<<20)
			for {
				m, err := b.ReadMessage()
				if err != nil {
					break // the batch's end (io.EOF), or its error below
				}
				got++
				off = m.Offset + 1
			}
			if err := b.Close(); err != nil {
				return got, err
			}
		}
		return got, nil
	})
}

// benchFranzBaseline reads with a franz-go client (the Kafka protocol's
// reference Go client), every partition assigned directly.
func benchFranzBaseline(ctx context.Context, addr, topic string, ends map[int]int64) (time.Duration, error) {
	parts := map[int32]kgo.Offset{}
	var want int64
	for p, end := range ends {
		parts[int32(p)] = kgo.NewOffset().AtStart()
		want += end
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	t0 := time.Now()
	var got int64
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("%s[%d]: %w", t, p, err) })
		if ferr != nil {
			return 0, ferr
		}
		got += int64(fs.NumRecords())
	}
	return time.Since(t0), nil
}

// benchPartitions runs read for every partition concurrently and returns
// the time until all are read; each must read exactly its end offset's
// records (the topic is written once, from offset 0).
func benchPartitions(ends map[int]int64, read func(p int, end int64) (int64, error)) (time.Duration, error) {
	t0 := time.Now()
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make(chan error, len(ends))
	for p, end := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := read(p, end)
			total.Add(got)
			if err != nil {
				errs <- fmt.Errorf("partition %d: %w", p, err)
			} else if got != end {
				errs <- fmt.Errorf("partition %d: read %d of %d records", p, got, end)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}
