#include "replay_bundle.hpp"

#include "byte_io.hpp"
#include "cuda_module.hpp"

#include "cuda_kernel.hpp"

#include "launch_attributes.hpp"
#include "launch_call.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_driver.hpp"
#include "cuda_session.hpp"
#include "errors.hpp"
#include "private_files.hpp"
#include "text.hpp"

namespace xcuda
{
    namespace
    {
        constexpr const char* manifest_name = "launch";
        constexpr const char* module_name = "module.cubin";
        constexpr const char* arguments_name = "arguments.bin";

        std::string region_file(std::size_t index)
        {
            return "region-" + std::to_string(index) + ".bin";
        }

        std::string global_file(std::size_t index)
        {
            return "global-" + std::to_string(index) + ".bin";
        }

        // O_EXCL: a file planted under the name before us is refused, not written through.
        void write_file(const std::string& folder, const std::string& name, const std::string& bytes)
        {
            std::string path = folder + "/" + name;
            int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0)
            {
                throw tool_error("could not write the replay bundle's " + path + ": " + std::strerror(errno));
            }
            int why = 0;
            if (!byte_io::write_all(fd, bytes.data(), bytes.size(), &why))
            {
                ::close(fd);
                throw tool_error("could not write the replay bundle's " + path + ": " + std::strerror(why) +
                                 " (set XCUDA_REPLAY_DIR to a folder with room for the launch's buffers)");
            }
            if (::close(fd) != 0)
            {
                throw tool_error("could not write the replay bundle's " + path + ": " + std::strerror(errno));
            }
        }

        std::string read_file(const std::string& folder, const std::string& name)
        {
            std::string bytes;
            std::string problem;
            if (!private_files::read(folder + "/" + name, bytes, &problem))
            {
                throw usage_error("the replay bundle's " + folder + "/" + name +
                                  " is missing, or is not a private file of yours (a link, a FIFO, a second hard "
                                  "link, or writable by others): it " + problem);
            }
            return bytes;
        }

        [[noreturn]] void malformed(const std::string& folder, std::size_t line, const std::string& what)
        {
            throw usage_error("the replay bundle " + folder + " is malformed: line " + std::to_string(line) + " of " +
                              manifest_name + ": " + what);
        }

        // The launch attributes' records (cluster X Y Z, priority P, programmatic 1), as write() puts them.
        std::string attribute_records(const launch_dims& dims)
        {
            std::string records;
            if (dims.cluster[0] != 0)
            {
                records += "cluster " + std::to_string(dims.cluster[0]) + " " + std::to_string(dims.cluster[1]) + " " +
                           std::to_string(dims.cluster[2]) + "\n";
            }
            if (dims.has_priority)
            {
                records += "priority " + std::to_string(dims.priority) + "\n";
            }
            if (dims.programmatic)
            {
                records += "programmatic 1\n";
            }
            return records;
        }

        // Reads one of those records, or `cooperative 1`, into the bundle: false when `key` is none of them. A
        // cluster has three axes of 1 to 1024 (the driver checks the rest when the replay launches).
        bool read_attribute(const std::string& key, std::istringstream& in, replay_bundle& bundle,
                            const std::string& folder, std::size_t line)
        {
            launch_dims& dims = bundle.dims;
            if (key == "cooperative")
            {
                int on = 0;
                if (!(in >> on))
                {
                    malformed(folder, line, "expected a number in the cooperative record");
                }
                bundle.cooperative = on != 0;
                return true;
            }
            if (key == "cluster")
            {
                for (unsigned& axis : dims.cluster)
                {
                    long long value = 0;
                    if (!(in >> value) || value < 1 || value > 1024)
                    {
                        malformed(folder, line, "a cluster needs three axes of 1 to 1024");
                    }
                    axis = static_cast<unsigned>(value);
                }
                return true;
            }
            if (key == "priority")
            {
                if (!(in >> dims.priority))
                {
                    malformed(folder, line, "a priority needs a number");
                }
                dims.has_priority = true;
                return true;
            }
            if (key == "programmatic")
            {
                int on = 0;
                if (!(in >> on) || (on != 0 && on != 1))
                {
                    malformed(folder, line, "programmatic needs 0 or 1");
                }
                dims.programmatic = on == 1;
                return true;
            }
            return false;
        }
    }

    std::vector<std::uint64_t> replay_bundle::place_pointers(const std::vector<pointer_extent>& extents)
    {
        // Sort by address, then sweep: an extent that starts before the current region ends joins it.
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < extents.size(); ++i)
        {
            if (extents[i].address != 0 && extents[i].bytes != 0)
            {
                order.push_back(i);
            }
        }
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return extents[a].address < extents[b].address;
        });
        std::vector<std::uint64_t> starts;
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        std::vector<std::size_t> members;
        auto close_region = [&] {
            if (members.empty())
            {
                return;
            }
            replay_region region;
            region.bytes = static_cast<std::size_t>(end - start);
            regions.push_back(region);
            starts.push_back(start);
            for (std::size_t i : members)
            {
                pointers.push_back({extents[i].argument, regions.size() - 1,
                                    static_cast<std::size_t>(extents[i].address - start)});
            }
            members.clear();
        };
        for (std::size_t i : order)
        {
            const pointer_extent& e = extents[i];
            if (!members.empty() && e.address < end)
            {
                end = std::max(end, e.address + e.bytes);
            }
            else
            {
                close_region();
                start = e.address;
                end = e.address + e.bytes;
            }
            members.push_back(i);
        }
        close_region();
        std::sort(pointers.begin(), pointers.end(),
                  [](const replay_pointer& a, const replay_pointer& b) { return a.argument < b.argument; });
        return starts;
    }

    void replay_bundle::write(const std::string& folder) const
    {
        std::string problem = private_files::folder_problem(folder);
        if (!problem.empty())
        {
            throw tool_error("the replay bundle's folder " + folder + " " + problem);
        }
        // Plain string appends, not an ostringstream: a module built with the C++ library linked in
        // statically (seen on the H200 host's pip build: no libstdc++.so.6 among its DT_NEEDED) crashed
        // in ostream's number formatting inside ipykernel, where another copy of the library was loaded.
        auto number = [](auto value) { return std::to_string(value); };
        std::string manifest = "xcuda-replay 1\n";
        manifest += "kernel " + symbol + "\n";
        manifest += "name " + kernel_name + "\n";
        manifest += "device " + number(device) + "\n";
        manifest += "grid " + number(dims.grid[0]) + " " + number(dims.grid[1]) + " " + number(dims.grid[2]) + "\n";
        manifest += "block " + number(dims.block[0]) + " " + number(dims.block[1]) + " " + number(dims.block[2]) + "\n";
        manifest += "shared " + number(dims.shared_mem) + "\n";
        manifest += attribute_records(dims);
        std::string packed;
        for (std::size_t i = 0; i < arguments.size(); ++i)
        {
            manifest += "argument " + number(i) + " " + number(packed.size()) + " " + number(arguments[i].size()) + "\n";
            packed += arguments[i];
        }
        for (std::size_t r = 0; r < regions.size(); ++r)
        {
            manifest += "region " + number(r) + " " + number(regions[r].bytes) + " " +
                        (regions[r].initialised ? region_file(r) : std::string("-")) + "\n";
        }
        for (const replay_pointer& p : pointers)
        {
            manifest += "pointer " + number(p.argument) + " " + number(p.region) + " " + number(p.offset) + "\n";
        }
        for (std::size_t g = 0; g < globals.size(); ++g)
        {
            manifest += "global " + number(g) + " " + number(globals[g].contents.size()) + " " + globals[g].symbol + "\n";
        }
        if (cooperative)
        {
            manifest += "cooperative 1\n";
        }
        write_file(folder, module_name, cubin);
        for (std::size_t g = 0; g < globals.size(); ++g)
        {
            write_file(folder, global_file(g), globals[g].contents);
        }
        write_file(folder, arguments_name, packed);
        for (std::size_t r = 0; r < regions.size(); ++r)
        {
            if (regions[r].initialised)
            {
                write_file(folder, region_file(r), regions[r].contents);
            }
        }
        // Last: a bundle with a manifest is complete.
        write_file(folder, manifest_name, manifest);
    }

    replay_bundle replay_bundle::read(const std::string& folder)
    {
        std::string problem = private_files::folder_problem(folder);
        if (!problem.empty())
        {
            throw usage_error("the replay bundle's folder " + folder + " " + problem);
        }
        replay_bundle bundle;
        std::vector<std::string> lines = text::split_lines(read_file(folder, manifest_name));
        if (lines.empty() || lines[0] != "xcuda-replay 1")
        {
            throw usage_error("the replay bundle " + folder + " is not one this xcuda-replay reads (its " +
                              manifest_name + " does not start with 'xcuda-replay 1')");
        }
        std::string packed = read_file(folder, arguments_name);
        bundle.cubin = read_file(folder, module_name);
        bool have_kernel = false;
        for (std::size_t n = 1; n < lines.size(); ++n)
        {
            const std::string& line = lines[n];
            std::istringstream in(line);
            std::string key;
            in >> key;
            auto number = [&](auto& value) {
                if (!(in >> value))
                {
                    malformed(folder, n + 1, "expected a number in '" + line + "'");
                }
            };
            if (key == "kernel")
            {
                in >> bundle.symbol;
                have_kernel = !bundle.symbol.empty();
            }
            else if (key == "name")
            {
                bundle.kernel_name = line.size() > 5 ? line.substr(5) : "";
            }
            else if (key == "device")
            {
                number(bundle.device);
            }
            else if (key == "grid" || key == "block")
            {
                std::array<unsigned, 3>& d = key == "grid" ? bundle.dims.grid : bundle.dims.block;
                number(d[0]);
                number(d[1]);
                number(d[2]);
            }
            else if (key == "shared")
            {
                number(bundle.dims.shared_mem);
            }
            else if (key == "argument")
            {
                std::size_t index = 0, offset = 0, size = 0;
                number(index);
                number(offset);
                number(size);
                if (index != bundle.arguments.size() || offset > packed.size() || size > packed.size() - offset)
                {
                    malformed(folder, n + 1, "argument " + std::to_string(index) + " is out of order or past the end of " +
                                                 arguments_name);
                }
                bundle.arguments.push_back(packed.substr(offset, size));
            }
            else if (key == "region")
            {
                std::size_t index = 0;
                replay_region region;
                std::string file;
                number(index);
                number(region.bytes);
                in >> file;
                if (index != bundle.regions.size() || file.empty())
                {
                    malformed(folder, n + 1, "region " + std::to_string(index) + " is out of order or names no file");
                }
                region.initialised = file != "-";
                if (region.initialised)
                {
                    if (file != region_file(index))
                    {
                        malformed(folder, n + 1, "region " + std::to_string(index) + " names the file '" + file +
                                                     "' instead of " + region_file(index));
                    }
                    region.contents = read_file(folder, file);
                    if (region.contents.size() != region.bytes)
                    {
                        malformed(folder, n + 1, file + " has " + std::to_string(region.contents.size()) +
                                                     " bytes, the region " + std::to_string(region.bytes));
                    }
                }
                bundle.regions.push_back(std::move(region));
            }
            else if (key == "global")
            {
                std::size_t index = 0, bytes = 0;
                replay_global global;
                number(index);
                number(bytes);
                in >> global.symbol;
                if (index != bundle.globals.size() || global.symbol.empty())
                {
                    malformed(folder, n + 1, "global " + std::to_string(index) + " is out of order or names no symbol");
                }
                global.contents = read_file(folder, global_file(index));
                if (global.contents.size() != bytes)
                {
                    malformed(folder, n + 1, global_file(index) + " has " + std::to_string(global.contents.size()) +
                                                 " bytes, the variable " + std::to_string(bytes));
                }
                bundle.globals.push_back(std::move(global));
            }
            else if (read_attribute(key, in, bundle, folder, n + 1))
            {
            }
            else if (key == "pointer")
            {
                replay_pointer p;
                number(p.argument);
                number(p.region);
                number(p.offset);
                bundle.pointers.push_back(p);
            }
            else if (!key.empty())
            {
                malformed(folder, n + 1, "unknown record '" + key + "'");
            }
        }
        if (!have_kernel)
        {
            throw usage_error("the replay bundle " + folder + " names no kernel");
        }
        for (const replay_pointer& p : bundle.pointers)
        {
            if (p.argument >= bundle.arguments.size() || bundle.arguments[p.argument].size() != sizeof(std::uint64_t) ||
                p.region >= bundle.regions.size() || p.offset > bundle.regions[p.region].bytes)
            {
                throw usage_error("the replay bundle " + folder + " is malformed: pointer argument " +
                                  std::to_string(p.argument) + " names a region or an argument that is not there");
            }
        }
        return bundle;
    }

    std::string replay_bundle::make_folder()
    {
        std::string root;
        for (const char* variable : {"XCUDA_REPLAY_DIR", "TMPDIR"})
        {
            const char* value = std::getenv(variable);
            if (value && *value)
            {
                root = value;
                break;
            }
        }
        if (root.empty())
        {
            root = "/tmp";
        }
        std::string pattern = root + "/xcuda-replay-XXXXXX";
        std::vector<char> path(pattern.begin(), pattern.end());
        path.push_back('\0');
        // mkdtemp makes the folder 0700 under a fresh name: nobody else can have put files in it.
        if (!::mkdtemp(path.data()))
        {
            throw tool_error("could not make a folder for the replay bundle under " + root + ": " + std::strerror(errno) +
                             " (set XCUDA_REPLAY_DIR to a writable folder)");
        }
        return path.data();
    }

    void replay_bundle::remove_folder(const std::string& folder) noexcept
    {
        if (folder.empty())
        {
            return;
        }
        if (DIR* dir = ::opendir(folder.c_str()))
        {
            std::vector<std::string> names;
            while (dirent* entry = ::readdir(dir))
            {
                std::string name = entry->d_name;
                if (name != "." && name != "..")
                {
                    names.push_back(name);
                }
            }
            ::closedir(dir);
            for (const std::string& name : names)
            {
                ::unlink((folder + "/" + name).c_str());
            }
        }
        ::rmdir(folder.c_str());
    }

    std::string replay_bundle::capture(cuda_session& session, std::uint64_t address, std::size_t bytes, CUstream stream)
    {
        std::string contents(bytes, '\0');
        if (bytes == 0)
        {
            return contents;
        }
        session.make_current();
        session.waits().wait(stream);  // what the launch would have seen: the earlier work on its stream done
        check(cuda_driver::get().cuMemcpyDtoH(contents.data(), static_cast<CUdeviceptr>(address), bytes), "cuMemcpyDtoH");
        return contents;
    }

    std::string replay_bundle::describe() const
    {
        std::size_t total = 0;
        for (const replay_region& r : regions)
        {
            total += r.bytes;
        }
        std::string text = (kernel_name.empty() ? symbol : kernel_name) + "[grid=" + dims_text(dims.grid) +
                           ", block=" + dims_text(dims.block);
        if (dims.shared_mem)
        {
            text += ", shared_mem=" + std::to_string(dims.shared_mem);
        }
        text += launch_attributes::text(dims);
        text += "] on device " + std::to_string(device) + ", " + std::to_string(regions.size()) + " buffer" +
                (regions.size() == 1 ? "" : "s");
        if (total)
        {
            text += " (" + text::bytes(static_cast<double>(total)) + ")";
        }
        return text;
    }

    replay_bundle replay_bundle::from_call(const launch_call& call, bool on_gpu)
    {
        cuda_kernel& kernel = call.kernel();
        cuda_module& module = *kernel.module();
        cuda_session& session = module.session();
        std::string arch;
        if (on_gpu)
        {
            const device_properties& device = session.properties();
            // The device's own limits (the function's are not known without loading it here).
            launch_plan::validate(call.dims(), device, device.max_threads_per_block, device.max_shared_per_block_optin,
                                  kernel.signature().name);
            // Its attributes against the device (a cluster on a GPU before 9.0, a grid not a multiple of it):
            // refused here rather than by the driver in the child.
            launch_attributes::check(call.dims(), device, {0, 0, 0}, kernel.signature().name);
            arch = module.compiled().arch.rfind("sm_", 0) == 0 && session.can_run(module.compiled().arch)
                       ? module.compiled().arch
                       : device.arch();
        }
        else
        {
            arch = module.inspection()->arch;
        }
        replay_bundle bundle;
        bundle.cubin = module.with_line_info(arch)->cubin;
        bundle.symbol = kernel.symbol();
        bundle.kernel_name = kernel.signature().name;
        bundle.device = on_gpu ? session.device_ordinal() : 0;
        bundle.dims = call.dims();
        const launch_plan& plan = call.plan();
        for (std::size_t i = 0; i < plan.arity(); ++i)
        {
            const auto* bytes = static_cast<const char*>(const_cast<launch_call&>(call).arguments().slot(i));
            bundle.arguments.emplace_back(bytes, plan.slots()[i].size);
        }
        // Host arrays: a region each, as the launch's device copies would be; device memory: by range.
        std::vector<pointer_extent> on_device;
        for (const argument_extent& e : call.extents())
        {
            if (e.host)
            {
                replay_region region;
                region.bytes = e.bytes;
                region.initialised = e.initialised;
                if (e.initialised)
                {
                    region.contents.assign(static_cast<const char*>(e.host), e.bytes);
                }
                if (e.bytes)
                {
                    bundle.regions.push_back(std::move(region));
                    bundle.pointers.push_back({e.index, bundle.regions.size() - 1, 0});
                }
            }
            else
            {
                on_device.push_back({e.index, e.address, e.bytes});
            }
        }
        std::size_t first_device_region = bundle.regions.size();
        std::vector<std::uint64_t> starts = bundle.place_pointers(on_device);
        for (std::size_t r = 0; r < starts.size(); ++r)
        {
            replay_region& region = bundle.regions[first_device_region + r];
            region.contents = capture(session, starts[r], region.bytes, call.stream());
        }
        bundle.cooperative = kernel.cooperative();
        if (on_gpu)
        {
            // What the kernel reads from its module's variables: the values they have now on this device,
            // after the work queued before the launch (a variable the compiler dropped is not in the binary).
            for (const module_variable& v : module.variables())
            {
                std::string symbol = module.symbol_in_binary(v);
                cuda_module::global_region region;
                try
                {
                    region = module.global(v);
                }
                catch (const cuda_error& e)
                {
                    if (e.code() == CUDA_ERROR_NOT_FOUND)
                    {
                        continue;
                    }
                    throw;
                }
                bundle.globals.push_back({symbol, capture(session, region.pointer, region.bytes, call.stream())});
            }
        }
        return bundle;
    }
}
