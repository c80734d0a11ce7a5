// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {Ownable} from "./Ownable.sol";
import {AddressSet, Bytes32Set} from "./Sets.sol";

/// @title Registry
/// @notice Who is on the network: providers (ad commitment, trust root, tier, active flag),
/// validators, routers with their URLs, and the approved TEE measurements. The owner
/// (governance) manages every set; a provider may update its own ad commitment. Each set has
/// a count and a paged getter, so a reader needs O(n / page) calls, not O(n).
///
/// It also names the network's other contracts (`staking`, `emission`, `escrow`), so a reader
/// given four addresses can check that they belong together (zero until the owner sets them).
contract Registry is Ownable {
    using AddressSet for AddressSet.Set;
    using Bytes32Set for Bytes32Set.Set;

    uint8 public constant TIER_VERIFIED = 0;
    uint8 public constant TIER_TEE = 1;
    uint256 public constant MAX_URL_LENGTH = 2048;

    /// @notice A provider as registered, and as returned by the getters.
    struct ProviderRecord {
        address provider;
        bytes32 adCommitment;
        address trustRoot;
        uint8 tier;
        bool active;
    }

    /// @notice A router: its id (an address) and the URL that serves `GET /v1/ads`.
    struct Router {
        address id;
        string url;
    }

    struct ProviderData {
        bytes32 adCommitment;
        address trustRoot;
        uint8 tier;
        bool active;
    }

    AddressSet.Set private _providers;
    mapping(address => ProviderData) private _providerData;
    AddressSet.Set private _validators;
    AddressSet.Set private _routers;
    mapping(address => string) private _routerUrl;
    Bytes32Set.Set private _measurements;

    /// @notice The network's canonical Staking contract (stake and the provider bond).
    address public staking;
    /// @notice The network's Emission contract (the reward schedule and its epoch clock).
    address public emission;
    /// @notice The network's Escrow contract (deposits and settlements).
    address public escrow;

    event ProviderRegistered(
        address indexed provider,
        address indexed trustRoot,
        uint8 tier,
        bytes32 adCommitment,
        bool active
    );
    event ProviderRevoked(address indexed provider);
    event ProviderTierChanged(address indexed provider, uint8 tier);
    event ProviderActiveChanged(address indexed provider, bool active);
    event TrustRootChanged(address indexed provider, address indexed trustRoot);
    event AdCommitmentUpdated(address indexed provider, bytes32 adCommitment, address indexed by);
    event ValidatorAdded(address indexed validator);
    event ValidatorRemoved(address indexed validator);
    event RouterAdded(address indexed router, string url);
    event RouterUrlChanged(address indexed router, string url);
    event RouterRemoved(address indexed router);
    event MeasurementApproved(bytes32 indexed measurement);
    event MeasurementRevoked(bytes32 indexed measurement);
    event NetworkContractsSet(
        address indexed staking, address indexed emission, address indexed escrow
    );

    error ProviderAlreadyRegistered(address provider);
    error ProviderNotRegistered(address provider);
    error InvalidTier(uint8 tier);
    error NotProviderOrOwner(address caller, address provider);
    error ValidatorAlreadyAdded(address validator);
    error ValidatorNotFound(address validator);
    error RouterAlreadyAdded(address router);
    error RouterNotFound(address router);
    error InvalidRouterUrl(uint256 length);
    error MeasurementAlreadyApproved(bytes32 measurement);
    error MeasurementNotApproved(bytes32 measurement);
    error ZeroMeasurement();

    constructor(address initialOwner) Ownable(initialOwner) {}

    // ---------------------------------------------------------------- network

    /// @notice Names the network's Staking, Emission and Escrow contracts (the owner may move
    /// the network to new ones; readers check that the addresses they were given agree).
    function setNetworkContracts(address staking_, address emission_, address escrow_)
        external
        onlyOwner
    {
        if (staking_ == address(0) || emission_ == address(0) || escrow_ == address(0)) {
            revert ZeroAddress();
        }
        staking = staking_;
        emission = emission_;
        escrow = escrow_;
        emit NetworkContractsSet(staking_, emission_, escrow_);
    }

    // ---------------------------------------------------------------- providers

    /// @notice Registers one provider.
    function registerProvider(ProviderRecord calldata record) external onlyOwner {
        _register(record);
    }

    /// @notice Registers many providers in one transaction.
    function registerProviders(ProviderRecord[] calldata records) external onlyOwner {
        for (uint256 i = 0; i < records.length; ++i) {
            _register(records[i]);
        }
    }

    /// @notice Removes a provider and all its data.
    function revokeProvider(address provider) external onlyOwner {
        if (!_providers.remove(provider)) revert ProviderNotRegistered(provider);
        delete _providerData[provider];
        emit ProviderRevoked(provider);
    }

    function setTier(address provider, uint8 tier) external onlyOwner {
        _requireProvider(provider);
        _requireTier(tier);
        _providerData[provider].tier = tier;
        emit ProviderTierChanged(provider, tier);
    }

    function setActive(address provider, bool active) external onlyOwner {
        _requireProvider(provider);
        _providerData[provider].active = active;
        emit ProviderActiveChanged(provider, active);
    }

    /// @notice Replaces the provider's serving-key address (key rotation).
    function setTrustRoot(address provider, address trustRoot) external onlyOwner {
        _requireProvider(provider);
        if (trustRoot == address(0)) revert ZeroAddress();
        _providerData[provider].trustRoot = trustRoot;
        emit TrustRootChanged(provider, trustRoot);
    }

    /// @notice Sets the keccak256 of the provider's canonical ad. The provider itself or the
    /// owner may call it.
    function updateAdCommitment(address provider, bytes32 adCommitment) external {
        if (msg.sender != provider && msg.sender != owner) {
            revert NotProviderOrOwner(msg.sender, provider);
        }
        _requireProvider(provider);
        _providerData[provider].adCommitment = adCommitment;
        emit AdCommitmentUpdated(provider, adCommitment, msg.sender);
    }

    function isProvider(address provider) external view returns (bool) {
        return _providers.contains(provider);
    }

    /// @notice One provider; `registered` is false (and the record zero) when unknown.
    function getProvider(address provider)
        external
        view
        returns (bool registered, ProviderRecord memory record)
    {
        registered = _providers.contains(provider);
        if (registered) record = _record(provider);
    }

    function providerCount() external view returns (uint256) {
        return _providers.length();
    }

    /// @notice Providers `offset` to `offset + limit` in enumeration order.
    function providersPage(uint256 offset, uint256 limit)
        external
        view
        returns (ProviderRecord[] memory records)
    {
        address[] memory addresses = _providers.page(offset, limit);
        records = new ProviderRecord[](addresses.length);
        for (uint256 i = 0; i < addresses.length; ++i) {
            records[i] = _record(addresses[i]);
        }
    }

    // --------------------------------------------------------------- validators

    function addValidator(address validator) external onlyOwner {
        if (validator == address(0)) revert ZeroAddress();
        if (!_validators.add(validator)) revert ValidatorAlreadyAdded(validator);
        emit ValidatorAdded(validator);
    }

    function removeValidator(address validator) external onlyOwner {
        if (!_validators.remove(validator)) revert ValidatorNotFound(validator);
        emit ValidatorRemoved(validator);
    }

    function isValidator(address validator) external view returns (bool) {
        return _validators.contains(validator);
    }

    function validatorCount() external view returns (uint256) {
        return _validators.length();
    }

    function validatorsPage(uint256 offset, uint256 limit)
        external
        view
        returns (address[] memory)
    {
        return _validators.page(offset, limit);
    }

    // ------------------------------------------------------------------ routers

    function addRouter(address router, string calldata url) external onlyOwner {
        if (router == address(0)) revert ZeroAddress();
        _requireUrl(url);
        if (!_routers.add(router)) revert RouterAlreadyAdded(router);
        _routerUrl[router] = url;
        emit RouterAdded(router, url);
    }

    function setRouterUrl(address router, string calldata url) external onlyOwner {
        if (!_routers.contains(router)) revert RouterNotFound(router);
        _requireUrl(url);
        _routerUrl[router] = url;
        emit RouterUrlChanged(router, url);
    }

    function removeRouter(address router) external onlyOwner {
        if (!_routers.remove(router)) revert RouterNotFound(router);
        delete _routerUrl[router];
        emit RouterRemoved(router);
    }

    function isRouter(address router) external view returns (bool) {
        return _routers.contains(router);
    }

    function routerUrl(address router) external view returns (string memory) {
        if (!_routers.contains(router)) revert RouterNotFound(router);
        return _routerUrl[router];
    }

    function routerCount() external view returns (uint256) {
        return _routers.length();
    }

    function routersPage(uint256 offset, uint256 limit)
        external
        view
        returns (Router[] memory routers)
    {
        address[] memory ids = _routers.page(offset, limit);
        routers = new Router[](ids.length);
        for (uint256 i = 0; i < ids.length; ++i) {
            routers[i] = Router({id: ids[i], url: _routerUrl[ids[i]]});
        }
    }

    // ------------------------------------------------------------- measurements

    /// @notice Adds a TEE measurement id (docs/protocol.md §6) to the approved set.
    function approveMeasurement(bytes32 measurement) external onlyOwner {
        if (measurement == bytes32(0)) revert ZeroMeasurement();
        if (!_measurements.add(measurement)) revert MeasurementAlreadyApproved(measurement);
        emit MeasurementApproved(measurement);
    }

    function revokeMeasurement(bytes32 measurement) external onlyOwner {
        if (!_measurements.remove(measurement)) revert MeasurementNotApproved(measurement);
        emit MeasurementRevoked(measurement);
    }

    function isApprovedMeasurement(bytes32 measurement) external view returns (bool) {
        return _measurements.contains(measurement);
    }

    function measurementCount() external view returns (uint256) {
        return _measurements.length();
    }

    function measurementsPage(uint256 offset, uint256 limit)
        external
        view
        returns (bytes32[] memory)
    {
        return _measurements.page(offset, limit);
    }

    // ----------------------------------------------------------------- internal

    function _register(ProviderRecord calldata record) private {
        if (record.provider == address(0) || record.trustRoot == address(0)) revert ZeroAddress();
        _requireTier(record.tier);
        if (!_providers.add(record.provider)) revert ProviderAlreadyRegistered(record.provider);
        _providerData[record.provider] = ProviderData({
            adCommitment: record.adCommitment,
            trustRoot: record.trustRoot,
            tier: record.tier,
            active: record.active
        });
        emit ProviderRegistered(
            record.provider, record.trustRoot, record.tier, record.adCommitment, record.active
        );
    }

    function _record(address provider) private view returns (ProviderRecord memory) {
        ProviderData storage data = _providerData[provider];
        return ProviderRecord({
            provider: provider,
            adCommitment: data.adCommitment,
            trustRoot: data.trustRoot,
            tier: data.tier,
            active: data.active
        });
    }

    function _requireProvider(address provider) private view {
        if (!_providers.contains(provider)) revert ProviderNotRegistered(provider);
    }

    function _requireTier(uint8 tier) private pure {
        if (tier > TIER_TEE) revert InvalidTier(tier);
    }

    function _requireUrl(string calldata url) private pure {
        uint256 length = bytes(url).length;
        if (length == 0 || length > MAX_URL_LENGTH) revert InvalidRouterUrl(length);
    }
}
