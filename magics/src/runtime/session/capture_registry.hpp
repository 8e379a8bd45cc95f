#pragma once
// Which of a session's streams are capturing into a CUDA graph (`with xcuda.graph()`), and which thread
// opened each capture.
//
// As in CUDA, a capture belongs to its stream: work queued on that stream, from any thread, is the graph's
// (on_stream), and work that another thread queues on another stream is not the capture's business: it is
// never refused and never captured. The thread that opened a capture (of_this_thread) also sends work that
// names no stream to the graph's stream and is refused what a graph cannot hold (synchronisation, timing,
// synchronous host copies), as CUDA's capture modes refuse the "unsafe" calls of the capturing thread.
// While graph.update converts a node's new arguments (updating), that thread is refused host arrays too.
//
// One per cuda_session (cuda_session::captures()). A graph is only named here, never touched: cuda_graph
// is a higher room's class, forward-declared.
//
// Threading: every member may be called from any thread. The launch path asks on_stream() and
// of_this_thread(), which read one atomic count and take no lock while no capture is open.

#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda.h>

namespace xcuda
{
    class cuda_graph;

    class capture_registry
    {
    public:
        // Records that `graph` captures `stream`, opened by the calling thread. The caller has checked that
        // this thread has no capture open (graphs do not nest).
        void open(cuda_graph* graph, CUstream stream);
        // Forgets graph's capture (from any thread: a graph dropped elsewhere). False when it was not open.
        bool close(const cuda_graph* graph) noexcept;
        bool is_open(const cuda_graph* graph) const noexcept;
        // The graph whose capture the calling thread opened, or null.
        cuda_graph* of_this_thread() const noexcept
        {
            return m_count.load(std::memory_order_acquire) == 0 ? nullptr : find_of_this_thread();
        }
        // The graph capturing `stream`, or null (the legacy default stream, null, never captures).
        cuda_graph* on_stream(CUstream stream) const noexcept
        {
            return stream == nullptr || m_count.load(std::memory_order_acquire) == 0 ? nullptr : find_on_stream(stream);
        }
        // Whether the calling thread converts a graph node's new arguments now (see updating).
        bool updating_on_this_thread() const noexcept;
        // While one exists, the calling thread converts a graph node's arguments (graph.update).
        class updating
        {
        public:
            explicit updating(capture_registry& registry);
            ~updating();
            updating(const updating&) = delete;
            updating& operator=(const updating&) = delete;

        private:
            capture_registry& m_registry;
        };

    private:
        cuda_graph* find_of_this_thread() const noexcept;
        cuda_graph* find_on_stream(CUstream stream) const noexcept;

        struct capture
        {
            cuda_graph* graph;
            CUstream stream;
            std::thread::id thread;
        };
        mutable std::mutex m_mutex;
        std::vector<capture> m_open;
        std::vector<std::thread::id> m_updating;
        // m_open.size() + m_updating.size(), read without the lock by the launch path.
        std::atomic<std::size_t> m_count{0};
    };
}
