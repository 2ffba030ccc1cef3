/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_comm.h: what corten_bench_comm's files share (bench_comm.c, bench_comm_nccl.c) and
 * the rows it prints, which corten_bench records (bench_comm_rows.c). */
#ifndef CORTEN_BENCH_COMM_H
#define CORTEN_BENCH_COMM_H

#define BENCH_COMM_NCCL_4M "allreduce 4 MiB float32, NCCL, 1 rank per GPU"
#define BENCH_COMM_NCCL_64M "allreduce 64 MiB float32, NCCL, 1 rank per GPU"

/* The median of v[0..n) (sorts v). */
double bench_comm_median(double *v, int n);

/* The NCCL rows (`corten_bench_comm --nccl`, one rank per GPU): 0, or 1 after saying why on
 * stderr. A build without CUDA has none. */
int bench_comm_nccl(int rank, int size, int quick);

#endif /* CORTEN_BENCH_COMM_H */
