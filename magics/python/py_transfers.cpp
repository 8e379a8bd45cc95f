// How numpy arrays travel to and from the device: xcuda.transfer_options(), xcuda.transfer_stats(),
// xcuda.release_host_registrations(), and the owner of a numpy buffer that the core's registration
// cache keeps while the buffer is page-locked in place (runtime/host_registration_cache).
//
// Why an owner: a registration must never outlive its memory (a freed-and-reused address would look
// page-locked to the driver). The owner holds a reference to the array that owns the buffer (the last
// ndarray of its .base chain), so the buffer stays allocated while registered; it is abandoned once
// that reference is the only one left (the user dropped every array viewing the buffer), and the
// cache then unregisters it and lets it go.
//
// Threading: owners are made with the GIL held; abandoned() reads a reference count without the GIL
// (a stale read only delays a release: nothing else can take a reference to an object only the
// owner holds); the destructor takes the GIL to drop the reference.

#include "py_common.hpp"

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "host_staging.hpp"
#include "temporary_cache.hpp"
#include "transfer_report.hpp"
#include "transfer_settings.hpp"

namespace xcuda::python
{
    namespace
    {
        // Which array an owner stands for, across copies: a serial per live object. An object's address
        // (its id) is not enough: a loop that makes a new array each time gets the freed one's id and
        // buffer address back, and `auto` took the new array for the old one's second use and registered
        // it (measured with the fake driver: 8 registrations in 12 calls with new arrays). So the serial is
        // kept with a weak reference to the object (numpy arrays have them): the same serial only while
        // that object lives. An object without weak references gets a new serial each time (never taken
        // for the same array: staged). Called with the GIL held (it guards the table).
        std::uintptr_t object_serial(PyObject* object)
        {
            struct seen
            {
                PyObject* weak = nullptr;
                std::uintptr_t serial = 0;
            };
            static std::unordered_map<PyObject*, seen> table;
            static std::uintptr_t next = 0;
            constexpr std::size_t limit = 256;
            auto alive = [](const std::pair<PyObject* const, seen>& entry) {
#if PY_VERSION_HEX >= 0x030D0000
                PyObject* referent = nullptr;
                bool same = PyWeakref_GetRef(entry.second.weak, &referent) == 1 && referent == entry.first;
                Py_XDECREF(referent);
                return same;
#else
                return PyWeakref_GetObject(entry.second.weak) == entry.first;
#endif
            };
            auto found = table.find(object);
            if (found != table.end())
            {
                if (alive(*found))
                {
                    return found->second.serial;
                }
                Py_DECREF(found->second.weak);
                table.erase(found);
            }
            PyObject* weak = PyWeakref_NewRef(object, nullptr);
            if (!weak)
            {
                PyErr_Clear();
                return ++next;
            }
            if (table.size() >= limit)
            {
                for (auto it = table.begin(); it != table.end();)
                {
                    if (alive(*it))
                    {
                        ++it;
                        continue;
                    }
                    Py_DECREF(it->second.weak);
                    it = table.erase(it);
                }
                if (table.size() >= limit)
                {
                    Py_DECREF(weak);
                    return ++next;  // 256 large arrays alive and copied: this one is not remembered
                }
            }
            table.emplace(object, seen{weak, ++next});
            return next;
        }

        class python_memory_owner : public host_memory_owner
        {
        public:
            explicit python_memory_owner(py::handle owner)
                : m_object(owner.inc_ref().ptr())
                , m_serial(object_serial(m_object))
            {
            }
            ~python_memory_owner() override
            {
                if (Py_IsInitialized())
                {
                    py::gil_scoped_acquire gil;
                    Py_DECREF(m_object);
                }
            }
            bool abandoned() const noexcept override { return Py_REFCNT(m_object) <= 1; }
            const void* identity() const noexcept override { return reinterpret_cast<const void*>(m_serial); }

        private:
            PyObject* m_object;
            std::uintptr_t m_serial;
        };

        py::dict settings_dict(const transfer_settings& s)
        {
            py::dict d;
            d["pageable"] = transfer_settings::mode_name(s.pageable);
            unsigned cores = std::max(1u, std::thread::hardware_concurrency());
            d["staging_threads"] = s.threads_for(cores);
            d["staging_chunk_mb"] = s.chunk_bytes >> 20;
            d["staging_buffers"] = s.chunk_count;
            d["threshold_mb"] = static_cast<double>(s.threshold) / (1 << 20);
            d["registration_limit_mb"] = s.registration_limit >> 20;
            d["registration_entries"] = s.registration_entries;
            d["temporary_cache_mb"] = s.temporary_cache_limit >> 20;
            return d;
        }

        std::optional<long long> given(py::handle value)
        {
            return value.is_none() ? std::nullopt : std::optional<long long>(value.cast<long long>());
        }

        py::dict transfer_options(cuda_session& session, py::object pageable, py::object threads, py::object chunk_mb, py::object buffers,
                                  py::object limit_mb, py::object entries, py::object temporary_mb)
        {
            refuse_while_capturing(session, graph_refusal::transfer_options);
            transfer_settings::changes changes;
            if (!pageable.is_none())
            {
                changes.pageable = pageable.cast<std::string>();
            }
            changes.staging_threads = given(threads);
            changes.staging_chunk_mb = given(chunk_mb);
            changes.staging_buffers = given(buffers);
            changes.registration_limit_mb = given(limit_mb);
            changes.registration_entries = given(entries);
            changes.temporary_cache_mb = given(temporary_mb);
            session.transfers().change(session.transfers().settings().with(changes));
            return settings_dict(session.transfers().settings());
        }

        py::dict transfer_stats(cuda_session& session)
        {
            py::dict d = settings_dict(session.transfers().settings());
            transfer_report report = transfer_report::of(session);
            d["device"] = report.device;
            auto group = [](const transfer_report::counters& counters) {
                py::dict result;
                for (const auto& [name, value] : counters)
                {
                    result[name] = value;
                }
                return result;
            };
            d["copies"] = group(report.copies);
            d["registrations"] = group(report.registrations);
            d["temporaries"] = group(report.temporaries);
            return d;
        }
    }

    std::shared_ptr<host_memory_owner> memory_owner(const cuda_session& session, const py::array& host, py::handle original)
    {
        if (host.ptr() != original.ptr())
        {
            return nullptr;  // a contiguous copy made for this call: gone after it, never worth keeping
        }
        if (static_cast<std::size_t>(host.nbytes()) < session.transfers().settings().threshold)
        {
            return nullptr;  // the driver copies it directly: nothing is registered, nothing to keep
        }
        // The array that owns the buffer: the last ndarray of the .base chain (its own data, or the one
        // that holds the buffer export of a non-numpy object, which cannot be resized while exported).
        PyObject* object = host.ptr();
        for (;;)
        {
            const auto* proxy = py::detail::array_proxy(object);
            if ((proxy->flags & py::detail::npy_api::NPY_ARRAY_OWNDATA_) || !proxy->base ||
                !py::isinstance<py::array>(proxy->base))
            {
                break;
            }
            object = proxy->base;
        }
        return std::make_shared<python_memory_owner>(object);
    }

    void register_transfers_options(py::module_& m, notebook_session& notebook)
    {
        cuda_session& session = notebook.session;
        m.def("transfer_options",
              [&session](py::object pageable, py::object threads, py::object chunk_mb, py::object buffers,
                         py::object limit_mb, py::object entries, py::object temporary_mb) {
                  return transfer_options(session, pageable, threads, chunk_mb, buffers, limit_mb, entries, temporary_mb);
              },
              py::kw_only(), py::arg("pageable") = py::none(),
              py::arg("staging_threads") = py::none(), py::arg("staging_chunk_mb") = py::none(),
              py::arg("staging_buffers") = py::none(), py::arg("registration_limit_mb") = py::none(),
              py::arg("registration_entries") = py::none(), py::arg("temporary_cache_mb") = py::none(),
              R"(How large copies of pageable numpy arrays are made; returns the settings (a dict).

With no arguments it only reports. pageable chooses the way (XCUDA_PAGEABLE sets it at start):
  'auto'        staged the first time an array is copied, registered in place from its second copy
                (the default: an array used once never pays for a registration)
  'registered'  the array's own memory page-locked in place (cuMemHostRegister) from the first copy,
                kept for the next copy while the array lives (at most registration_limit_mb)
  'per-copy'    registered for each copy and unregistered after it
  'staged'      through page-locked staging buffers (staging_buffers x staging_chunk_mb) filled and
                emptied by staging_threads threads while the DMA moves the previous buffer
  'driver'      the driver's own pageable copy (slow; for comparison)
temporary_cache_mb: device memory that finished launches' numpy-argument buffers may keep for the
next launch (XCUDA_TEMPORARY_CACHE_MB, default 1024; 0 keeps none; see release_cached_temporaries).
Changing pageable releases what is registered. Nothing here changes what an array holds or when it
may be used again: every copy has finished when the call that made it returns.)");
        m.def("transfer_stats", [&session] { return transfer_stats(session); },
              "The settings, and for the current device the copies made by each route (zero_chunks: staging chunks "
              "to the device found all zero, set there instead of copied; known_zero_pieces: pieces to the device "
              "known zero before their copy, not read; prepared and scanned: launch outputs faulted in, or read "
              "for zeros, while the inputs were copied in; scan_unread_pieces: pieces such a read had not reached when "
              "the copy in came, read by the copy threads instead) and the registration "
              "cache's counts (entries, bytes, hits, registrations, unregistrations, failures, staged_first_use, "
              "staged_same_use: the copy back of an array one launch also copied in, evictions, abandoned).");
        m.def("release_host_registrations",
              [&session] {
                  refuse_while_capturing(session, graph_refusal::release_host_registrations);
                  py::gil_scoped_release release;
                  session.transfers().release_host_registrations();
              },
              "Unregister every numpy buffer page-locked in place on the current device and let the arrays go.");
        m.def("release_cached_temporaries",
              [&session] {
                  refuse_while_capturing(session, graph_refusal::release_cached_temporaries);
                  return session.transfers().temporaries().release_all();
              },
              R"(Free the device buffers that finished launches' numpy arguments left for the next launch.

A launch given a numpy array copies it into a device buffer; when the launch has finished, the buffer
is kept (at most transfer_options()['temporary_cache_mb'], XCUDA_TEMPORARY_CACHE_MB) and handed to the
next launch that needs one of exactly its size, which saves a cuMemAlloc and a cuMemFree. An allocation
that runs out of memory frees them first by itself. Returns the bytes freed.)");
    }
}
