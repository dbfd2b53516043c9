"""fusec's runtime: kernel cache, CPU and CUDA executors."""
