// xcuda-replay: makes one launch that a notebook wrote down (a replay_bundle) in a process of its own,
// so that ncu can profile it and compute-sanitizer check it without the notebook's session at risk.
//
//   xcuda-replay BUNDLE                 launch once, wait, free everything, exit
//   xcuda-replay --output DIR BUNDLE    the same, then write each buffer's bytes to DIR/region-N.out
//   xcuda-replay --describe BUNDLE      print what the bundle holds (no GPU needed)
//
// Exit status: 0 the launch completed; 1 a bad command line or bundle; 2 no GPU or driver; 3 the
// launch failed (a kernel fault: the sanitizers' reports say where). Messages go to stderr, one line
// each, starting with "xcuda-replay: " so the tools' reports can tell them from the kernel's printf.

#include <cstdio>
#include <exception>
#include <string>

#include "errors.hpp"
#include "compile_worker.hpp"
#include "launch_replay.hpp"
#include "replay_bundle.hpp"

namespace
{
    int usage()
    {
        std::fprintf(stderr, "usage: xcuda-replay [--output DIR | --describe] BUNDLE\n"
                             "Launches the kernel a notebook's %%cuda_profile / %%cuda_sanitize wrote to BUNDLE once.\n");
        return 1;
    }

    std::string describe(const xcuda::replay_bundle& bundle)
    {
        std::string text = bundle.describe() + "\nkernel " + bundle.symbol + "\n";
        for (std::size_t i = 0; i < bundle.arguments.size(); ++i)
        {
            text += "argument " + std::to_string(i) + ": " + std::to_string(bundle.arguments[i].size()) + " bytes";
            for (const auto& p : bundle.pointers)
            {
                if (p.argument == i)
                {
                    text += ", points into region " + std::to_string(p.region) + " at offset " + std::to_string(p.offset);
                }
            }
            text += "\n";
        }
        for (std::size_t r = 0; r < bundle.regions.size(); ++r)
        {
            text += "region " + std::to_string(r) + ": " + std::to_string(bundle.regions[r].bytes) + " bytes" +
                    (bundle.regions[r].initialised ? "" : ", uninitialised") + "\n";
        }
        return text;
    }
}

int main(int argc, char** argv)
{
    xcuda::compile_worker::exit_with_parent();  // ends when whoever started it (the kernel, a tool) does
    std::string output;
    std::string folder;
    bool describe_only = false;
    for (int i = 1; i < argc; ++i)
    {
        std::string word = argv[i];
        if (word == "--output" && i + 1 < argc)
        {
            output = argv[++i];
        }
        else if (word == "--describe")
        {
            describe_only = true;
        }
        else if (word == "-h" || word == "--help" || !folder.empty() || word.empty() || word[0] == '-')
        {
            return usage();
        }
        else
        {
            folder = word;
        }
    }
    if (folder.empty())
    {
        return usage();
    }
    xcuda::replay_bundle bundle;
    try
    {
        bundle = xcuda::replay_bundle::read(folder);
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "xcuda-replay: %s\n", e.what());
        return 1;
    }
    if (describe_only)
    {
        std::fputs(describe(bundle).c_str(), stdout);
        return 0;
    }
    try
    {
        xcuda::launch_replay::run(bundle, output);
    }
    catch (const xcuda::cuda_unavailable_error& e)
    {
        std::fprintf(stderr, "xcuda-replay: no GPU: %s\n", e.what());
        return 2;
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "xcuda-replay: %s failed: %s\n", bundle.describe().c_str(), e.what());
        return 3;
    }
    return 0;
}
